import type { Knex } from 'knex';

export const name = '20261121000005_cover_snapshot_index';

/** The snapshot reads type, parent and name of up to 10 000 rows: carry them in its index. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    'ALTER TABLE resources DROP INDEX ix_resources_snapshot, ADD INDEX ix_resources_snapshot (user_id, alive, updated_at DESC, id, type, parent_id, name)',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE resources DROP INDEX ix_resources_snapshot, ADD INDEX ix_resources_snapshot (user_id, alive, updated_at DESC, id)');
}
