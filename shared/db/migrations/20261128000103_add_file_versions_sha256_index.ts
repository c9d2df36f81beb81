import type { Knex } from 'knex';

export const name = '20261128000103_add_file_versions_sha256_index';

/** The thumbnail sweep asks whether any version still has content with a digest (shared/thumbnails). */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE file_versions ADD INDEX ix_file_versions_sha256 (content_sha256)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE file_versions DROP INDEX ix_file_versions_sha256');
}
