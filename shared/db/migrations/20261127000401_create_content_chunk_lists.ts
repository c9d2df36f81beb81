import type { Knex } from 'knex';

export const name = '20261127000401_create_content_chunk_lists';

/*
 * The chunk list of a content (shared/protocol/chunking.ts), keyed by the content's storage key, so
 * it is found with the content and removed with it (shared/chunks/chunk-lists.cleanup.ts). Keys are
 * never reused, so a list never describes other bytes than the ones it was made from. `chunks` packs
 * each chunk as 4 bytes of length (big-endian) and 32 bytes of SHA-256; offsets follow from the lengths.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE content_chunk_lists (
      storage_key VARCHAR(160) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      content_sha256 CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      size_bytes BIGINT UNSIGNED NOT NULL,
      algorithm VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      chunks LONGBLOB NOT NULL,
      created_at DATETIME(3) NOT NULL,
      PRIMARY KEY (storage_key)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('content_chunk_lists');
}
