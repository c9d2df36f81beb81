import type { Knex } from 'knex';

export const name = '20261124000101_add_change_device';

/*
 * resources.change_device_id: the device whose request made the resource's latest change, written
 * with change_seq by every change (owner.transaction.ts, changeColumns), '' when no device made it
 * (a scheduled purge). The change feed shows it as `deviceId`, so a device can tell its own changes
 * from others'. ASCII, like every id column: 32 bytes a row. Existing rows are filled by the next
 * migration.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("ALTER TABLE resources ADD COLUMN change_device_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE resources DROP COLUMN change_device_id');
}
