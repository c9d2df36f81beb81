import type { Knex } from 'knex';

export const name = '20261124000503_create_file_versions';

const ID = 'CHAR(32) CHARACTER SET ascii COLLATE ascii_bin';
const TREE_ID = 'VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin';

/*
 * Version history: content a file had before it was replaced, under a storage key of its own.
 * - ix_file_versions_file: a file's versions, most recently replaced first (the listing, the cap).
 * - ix_file_versions_user_age: a user's oldest versions first (dropped to make room in the quota).
 * - ix_file_versions_age: versions of every user past the retention (the scheduled job).
 * - ix_file_versions_storage: fsck asks whether a file in the store is some version's content.
 * resources.content_at / content_device_id: when the current content was written and by which
 * device, carried into the version it becomes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE file_versions (
      id ${ID} NOT NULL,
      user_id ${ID} NOT NULL,
      file_id ${TREE_ID} NOT NULL,
      storage_key VARCHAR(160) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      size_bytes BIGINT UNSIGNED NOT NULL,
      content_sha256 CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      mime_type VARCHAR(255) NULL,
      device_id VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
      created_at DATETIME(3) NOT NULL,
      replaced_at DATETIME(3) NOT NULL,
      PRIMARY KEY (id),
      KEY ix_file_versions_file (user_id, file_id, replaced_at DESC, id),
      KEY ix_file_versions_user_age (user_id, replaced_at, id),
      KEY ix_file_versions_age (replaced_at, id),
      KEY ix_file_versions_storage (storage_key)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
  await knex.raw(
    `ALTER TABLE resources
       ADD COLUMN content_at DATETIME(3) NULL,
       ADD COLUMN content_device_id VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE resources DROP COLUMN content_device_id, DROP COLUMN content_at');
  await knex.schema.dropTable('file_versions');
}
