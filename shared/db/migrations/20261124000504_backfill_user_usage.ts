import type { Knex } from 'knex';
import { UsageRepository } from '../../quota/usage.repository';

export const name = '20261124000504_backfill_user_usage';

/** Fills the byte counters of users that predate them from their resources. */
export async function up(knex: Knex): Promise<void> {
  await new UsageRepository(knex).rebuildAll();
}

export async function down(knex: Knex): Promise<void> {
  await knex('users').update({ files_bytes: 0, trash_bytes: 0, versions_bytes: 0, uploads_bytes: 0 });
}
