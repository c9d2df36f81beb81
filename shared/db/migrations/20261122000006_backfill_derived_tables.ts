import type { Knex } from 'knex';
import { DerivedRepair } from '../derived/derived.repair';

export const name = '20261122000006_backfill_derived_tables';

/** Fills the derived tables from the rows that predate them, owner by owner, in bulk. */
export async function up(knex: Knex): Promise<void> {
  await new DerivedRepair(knex).rebuildAll();
}

export async function down(knex: Knex): Promise<void> {
  await knex('search_grams').delete();
  await knex('folder_file_counts').delete();
}
