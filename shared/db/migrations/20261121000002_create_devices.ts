import type { Knex } from 'knex';

export const name = '20261121000002_create_devices';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('devices', (t) => {
    t.specificType('id', 'CHAR(32) CHARACTER SET ascii COLLATE ascii_bin').primary();
    t.string('name', 100).notNullable();
    t.string('platform', 50).nullable();
    // Informative only: the last user who logged in from this device. Never used for authorisation.
    t.specificType('user_id', 'CHAR(32) CHARACTER SET ascii COLLATE ascii_bin').nullable().index('ix_devices_user');
    t.specificType('created_at', 'DATETIME(3)').notNullable();
    t.specificType('last_login_at', 'DATETIME(3)').nullable();
    t.specificType('deleted_at', 'DATETIME(3)').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('devices');
}
