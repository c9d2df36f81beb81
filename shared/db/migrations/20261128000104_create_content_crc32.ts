import type { Knex } from 'knex';

export const name = '20261128000104_create_content_crc32';

/*
 * The CRC-32 of a content, by its storage key, recorded when the one content write path
 * (shared/content/content.writer.ts) places bytes it saw whole, so that a ZIP of it needs no pass
 * over its bytes (services/gateway/archive/). By key rather than a column of the rows naming it:
 * the bytes under a key never change, so a row copied, restored or moved onto a key can never carry
 * a CRC of other bytes. A key without a row (written by a path that did not see every byte, or
 * before this table) has its CRC computed where it is read, as before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE content_crc32 (
      storage_key VARCHAR(160) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      crc32 INT UNSIGNED NOT NULL,
      PRIMARY KEY (storage_key)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('content_crc32');
}
