import type { Knex } from 'knex';

export const name = '20261122000002_add_trash_purge';

/*
 * The trash: a deleted resource stays restorable until it is purged (by DELETE /trash/:id or by the
 * retention job), after which it is a tombstone that only the change feed still shows.
 * - purged_at: when its content left the disk; NULL while restorable (and while active).
 * - restorable: 1 while deleted and not purged, NULL otherwise, a generated column (not an expression
 *   index) so the same DDL runs on MySQL 8 and MariaDB; the trash listing and the purge job are
 *   ranges of the two indexes below and never read active rows or tombstones.
 * - ix_resources_storage: fsck asks whether a file on disk is some resource's content.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE resources ADD COLUMN purged_at DATETIME(3) NULL');
  await knex.raw(
    `ALTER TABLE resources
       ADD COLUMN restorable TINYINT AS (IF(deleted_at IS NOT NULL AND purged_at IS NULL, 1, NULL)) STORED,
       ADD INDEX ix_resources_trash (user_id, restorable, deleted_at DESC, id),
       ADD INDEX ix_resources_purge (restorable, deleted_at, id),
       ADD INDEX ix_resources_storage (storage_key)`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    `ALTER TABLE resources
       DROP INDEX ix_resources_storage,
       DROP INDEX ix_resources_purge,
       DROP INDEX ix_resources_trash,
       DROP COLUMN restorable`,
  );
  await knex.raw('ALTER TABLE resources DROP COLUMN purged_at');
}
