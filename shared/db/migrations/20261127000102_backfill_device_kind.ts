import type { Knex } from 'knex';

export const name = '20261127000102_backfill_device_kind';

/** Devices made for app passwords before devices had a kind are the ones app_passwords names. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("UPDATE devices d JOIN app_passwords a ON a.device_id = d.id SET d.kind = 'app_password'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("UPDATE devices SET kind = 'client' WHERE kind = 'app_password'");
}
