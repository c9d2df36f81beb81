import type { Knex } from 'knex';

export const name = '20261124000201_create_content_store';

/**
 * The identity of the database's content store: one row, whose id is also written in the store's
 * marker (shared/content/store.identity.ts). A store without that marker is not this database's, and
 * nothing may judge its content missing or orphaned.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE content_store (
      singleton TINYINT NOT NULL,
      store_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      created_at DATETIME(3) NOT NULL,
      PRIMARY KEY (singleton)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('content_store');
}
