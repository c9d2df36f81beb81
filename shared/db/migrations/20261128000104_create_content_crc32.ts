import type { Knex } from 'knex';

export const name = '20261128000104_create_content_crc32';

/*
 * The CRC-32 of a content, by its SHA-256, recorded when the one content write path
 * (shared/content/content.writer.ts) places bytes it saw whole, so that a ZIP of them needs no pass
 * over them (services/gateway/archive/). By digest rather than by key or a column of the rows naming
 * the bytes: a CRC is a function of the bytes alone, so a row copied, restored or given a reused key
 * can never meet a CRC of other bytes. A digest without a row has its CRC computed where it is read.
 * Rows of digests no file or version holds any more are swept (shared/content/content-crc.sweeper.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE content_crc32 (
      content_sha256 CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      crc32 INT UNSIGNED NOT NULL,
      PRIMARY KEY (content_sha256)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('content_crc32');
}
