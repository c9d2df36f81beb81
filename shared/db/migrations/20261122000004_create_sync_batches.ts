import type { Knex } from 'knex';

export const name = '20261122000004_create_sync_batches';

/**
 * The durable inbox of sync batches. A batch is recorded here when the gateway accepts it, in the
 * order of its id (per device, under the device row's lock), and applied by a worker in that order;
 * the queue only rings the worker. `status` is pending until applied (done), withdrawn by the
 * gateway (cancelled) or given up by the worker (failed); only pending batches are ever applied.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE sync_batches (
      id BIGINT NOT NULL AUTO_INCREMENT,
      device_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      user_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      status VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      ops LONGTEXT NOT NULL,
      result LONGTEXT NULL,
      request_id VARCHAR(128) NOT NULL,
      created_at DATETIME(3) NOT NULL,
      finished_at DATETIME(3) NULL,
      PRIMARY KEY (id),
      INDEX ix_sync_batches_device (device_id, status, id),
      INDEX ix_sync_batches_status (status, id),
      INDEX ix_sync_batches_created (created_at)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('sync_batches');
}
