import type { Knex } from 'knex';

export const name = '20261127000301_add_children_name_index';

/**
 * GET /v1/items pages a folder's children by name in code-point order: name_key holds the name's
 * UTF-8 bytes, whose order is the code points' (the utf8mb4_bin `name` pads trailing spaces, so "a"
 * and "a " would tie). Leading with the folder and kind, a page is one range read of this index
 * whatever the folder's size.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE resources ADD INDEX ix_resources_children_name (user_id, parent_key, type, alive, name_key, id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE resources DROP INDEX ix_resources_children_name');
}
