import type { Knex } from 'knex';

export const name = '20261121000003_create_resources';

const ID = 'CHAR(32) CHARACTER SET ascii COLLATE ascii_bin';
// VARCHAR, not CHAR: MariaDB refuses generated columns over CHAR (their value depends on sql_mode).
const TREE_ID = 'VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin';

/*
 * Generated columns (not expression indexes) so the same DDL runs on MySQL 8 and MariaDB:
 * - parent_key: '' at the root, so the root takes part in the sibling-name unique key.
 * - name_key: the name as bytes; utf8mb4_bin pads trailing spaces, bytes do not, so "a" and "a "
 *   are different names, as the name rules want.
 * - alive: 1 while active, NULL once deleted; NULLs never collide in a unique key, so a
 *   soft-deleted resource does not hold its name.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE resources (
      id ${TREE_ID} NOT NULL,
      user_id ${ID} NOT NULL,
      parent_id ${TREE_ID} NULL,
      type ENUM('file','folder') NOT NULL,
      name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      size_bytes BIGINT UNSIGNED NOT NULL DEFAULT 0,
      mime_type VARCHAR(255) NULL,
      extension VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NULL,
      storage_key VARCHAR(80) CHARACTER SET ascii COLLATE ascii_bin NULL,
      content_sha256 CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
      created_at DATETIME(3) NOT NULL,
      updated_at DATETIME(3) NOT NULL,
      deleted_at DATETIME(3) NULL,
      parent_key ${TREE_ID} AS (COALESCE(parent_id, '')) STORED,
      name_key VARBINARY(1020) AS (CAST(name AS BINARY)) STORED,
      alive TINYINT AS (IF(deleted_at IS NULL, 1, NULL)) STORED,
      PRIMARY KEY (id),
      UNIQUE KEY uq_resources_sibling_name (user_id, parent_key, name_key, alive),
      KEY ix_resources_list_created (user_id, parent_key, type, alive, created_at, id),
      KEY ix_resources_list_updated (user_id, parent_key, type, alive, updated_at, id),
      KEY ix_resources_list_size (user_id, parent_key, type, alive, size_bytes, id),
      KEY ix_resources_list_name (user_id, parent_key, type, alive, name, id),
      KEY ix_resources_search (user_id, type, alive, name, id),
      KEY ix_resources_snapshot (user_id, alive, updated_at DESC, id),
      KEY ix_resources_parent (parent_id),
      CONSTRAINT fk_resources_user FOREIGN KEY (user_id) REFERENCES users (id),
      CONSTRAINT fk_resources_parent FOREIGN KEY (parent_id) REFERENCES resources (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('resources');
}
