import type { Knex } from 'knex';

export const name = '20261122000005_create_derived_tables';

const ID = 'CHAR(32) CHARACTER SET ascii COLLATE ascii_bin';
const TREE_ID = 'VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin';

/*
 * Data derived from `resources`, kept in the same transaction as every change (shared/db/derived/derived.hooks.ts)
 * and rebuilt from scratch by `npm run fsck -- --repair`:
 * - folder_file_counts: active files per (owner, folder or root ''), the `total` of GET /v1/files.
 * - search_grams: one row per distinct trigram of LOWER(name) of every active file, hashed with CRC32
 *   (a collision only adds a candidate, the LIKE on the carried name removes it). The name is carried
 *   in the key so a posting list is read in search order and verified without touching `resources`.
 * - search_positions: 1..255, the character positions the trigrams are cut at, in SQL.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE folder_file_counts (
      user_id ${ID} NOT NULL,
      parent_key ${TREE_ID} NOT NULL,
      files BIGINT NOT NULL,
      PRIMARY KEY (user_id, parent_key)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
  await knex.raw(`
    CREATE TABLE search_grams (
      user_id ${ID} NOT NULL,
      gram INT UNSIGNED NOT NULL,
      name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      resource_id ${TREE_ID} NOT NULL,
      PRIMARY KEY (user_id, gram, name, resource_id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
  await knex.raw('CREATE TABLE search_positions (n SMALLINT UNSIGNED NOT NULL PRIMARY KEY) ENGINE=InnoDB');
  await knex('search_positions').insert(Array.from({ length: 255 }, (_, i) => ({ n: i + 1 })));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('search_positions');
  await knex.schema.dropTable('search_grams');
  await knex.schema.dropTable('folder_file_counts');
}
