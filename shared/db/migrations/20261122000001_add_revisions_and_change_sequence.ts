import type { Knex } from 'knex';

export const name = '20261122000001_add_revisions_and_change_sequence';

/*
 * The change feed is a per-owner sequence, not a clock: users.change_seq is the last position handed
 * out, and every write takes the next one while it holds the owner's row lock (see owner.transaction.ts),
 * so positions commit in order. resources.change_seq is the position of a resource's latest change; a
 * resource therefore appears once in the feed, at its latest state. Rows that predate the feed keep
 * position 0, which the feed's start still includes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE users ADD COLUMN change_seq BIGINT UNSIGNED NOT NULL DEFAULT 0');
  await knex.raw(
    `ALTER TABLE resources
       ADD COLUMN rev INT UNSIGNED NOT NULL DEFAULT 1,
       ADD COLUMN change_seq BIGINT UNSIGNED NOT NULL DEFAULT 0,
       ADD INDEX ix_resources_changes (user_id, change_seq, id)`,
  );
  // The snapshot reads rev too; keep its index covering.
  await knex.raw(
    'ALTER TABLE resources DROP INDEX ix_resources_snapshot, ADD INDEX ix_resources_snapshot (user_id, alive, updated_at DESC, id, type, parent_id, name, rev)',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    'ALTER TABLE resources DROP INDEX ix_resources_snapshot, ADD INDEX ix_resources_snapshot (user_id, alive, updated_at DESC, id, type, parent_id, name)',
  );
  await knex.raw('ALTER TABLE resources DROP INDEX ix_resources_changes, DROP COLUMN change_seq, DROP COLUMN rev');
  await knex.raw('ALTER TABLE users DROP COLUMN change_seq');
}
