import type { Knex } from 'knex';

export const name = '20261128000101_create_content_thumbnails';

/*
 * Thumbnails of image content, one row per content digest (files with the same bytes share them),
 * their images in the content store under `thumbs/<sha256>-<size>.webp` (shared/thumbnails).
 * `state`: 'making' while a worker writes the images (so a crash leaves a row the sweep finds),
 * 'ready' once all sizes are stored, 'unreadable' when the library cannot decode the content,
 * 'removing' while the sweep removes the images of a digest no content has any more.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE content_thumbnails (
      content_sha256 CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      state ENUM('making','ready','unreadable','removing') NOT NULL,
      updated_at DATETIME(3) NOT NULL,
      PRIMARY KEY (content_sha256)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('content_thumbnails');
}
