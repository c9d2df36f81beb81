import type { Knex } from 'knex';

export const name = '20261124000102_backfill_change_device';

/*
 * Fills change_device_id of rows written before it existed, where the data says who made the latest
 * change, and leaves '' (no device known) elsewhere:
 * 1. a sync op's trace written at the very instant of the resource's latest change (the worker gives
 *    an op's trace and its write the same time) names the device;
 * 2. every other row that took the same feed position took it in that same change (a deleted
 *    folder's subtree), so it gets the same device;
 * 3. a file never changed since its upload (rev 1, with content) was made by the device under whose
 *    folder its content was stored (`<deviceId>/<resourceId>...`).
 * Content replacements, restores and deletes through the API left no trace: those rows stay ''.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `UPDATE resources r
       JOIN operation_traces t ON t.resource_id = r.id AND t.user_id = r.user_id AND t.created_at = r.updated_at
        SET r.change_device_id = t.device_id
      WHERE r.change_device_id = ''`,
  );
  await knex.raw(
    `UPDATE resources r
       JOIN (SELECT user_id, change_seq, MAX(change_device_id) AS device_id
               FROM resources
              WHERE change_device_id <> '' AND change_seq > 0
              GROUP BY user_id, change_seq) g ON g.user_id = r.user_id AND g.change_seq = r.change_seq
        SET r.change_device_id = g.device_id
      WHERE r.change_device_id = ''`,
  );
  await knex.raw(
    `UPDATE resources
        SET change_device_id = SUBSTRING_INDEX(storage_key, '/', 1)
      WHERE change_device_id = '' AND rev = 1 AND storage_key REGEXP '^[0-9a-f]{32}/'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("UPDATE resources SET change_device_id = ''");
}
