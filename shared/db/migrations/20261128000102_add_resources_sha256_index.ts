import type { Knex } from 'knex';

export const name = '20261128000102_add_resources_sha256_index';

/** The thumbnail sweep asks whether any file still has content with a digest (shared/thumbnails). */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE resources ADD INDEX ix_resources_sha256 (content_sha256)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE resources DROP INDEX ix_resources_sha256');
}
