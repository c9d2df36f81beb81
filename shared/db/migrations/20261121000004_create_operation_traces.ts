import type { Knex } from 'knex';

export const name = '20261121000004_create_operation_traces';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE operation_traces (
      device_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      operation_id BIGINT NOT NULL,
      user_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      op_type VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      ref_type VARCHAR(64) NULL,
      ref_id BIGINT NULL,
      resource_id CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL,
      payload LONGTEXT NOT NULL,
      created_at DATETIME(3) NOT NULL,
      PRIMARY KEY (device_id, operation_id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('operation_traces');
}
