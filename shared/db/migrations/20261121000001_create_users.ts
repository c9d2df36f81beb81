import type { Knex } from 'knex';

export const name = '20261121000001_create_users';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.specificType('id', 'CHAR(32) CHARACTER SET ascii COLLATE ascii_bin').primary();
    t.string('username', 64).notNullable();
    t.string('username_normalized', 64).notNullable().unique('uq_users_username_normalized');
    t.string('email', 254).nullable();
    t.string('password_hash', 255).notNullable();
    t.boolean('is_admin').notNullable().defaultTo(false);
    t.specificType('created_at', 'DATETIME(3)').notNullable();
    t.specificType('updated_at', 'DATETIME(3)').notNullable();
    t.specificType('deleted_at', 'DATETIME(3)').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('users');
}
