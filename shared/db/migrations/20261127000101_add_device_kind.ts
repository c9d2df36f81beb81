import type { Knex } from 'knex';

export const name = '20261127000101_add_device_kind';

/*
 * What a device is: `client` (registered with POST /v1/devices and signed in on), `app_password` (the
 * device of one app password) or `link` (the device of one share link). Only `client` devices are
 * listed as the user's devices; the others are created and retired with their credential.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    "ALTER TABLE devices ADD COLUMN kind VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'client' AFTER platform",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('devices', (t) => t.dropColumn('kind'));
}
