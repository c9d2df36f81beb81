import type { Knex } from 'knex';

export const name = '20261122000003_widen_storage_key';

/*
 * A storage key is `<deviceId>/<resourceId>[.<ext>]` (up to 82 characters with a 16-character
 * extension, which VARCHAR(80) refused) and, for replaced content, `<deviceId>/<resourceId>.<8 hex>[.<ext>]`
 * (up to 91). 160 leaves room without an index to grow.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE resources MODIFY storage_key VARCHAR(160) CHARACTER SET ascii COLLATE ascii_bin NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE resources MODIFY storage_key VARCHAR(80) CHARACTER SET ascii COLLATE ascii_bin NULL');
}
