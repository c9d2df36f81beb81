import type { Knex } from 'knex';

export const name = '20261124000502_create_upload_reservations';

const ID = 'CHAR(32) CHARACTER SET ascii COLLATE ascii_bin';

/*
 * The bytes a resumable upload holds from its creation (its Upload-Length) until it finishes, is
 * terminated or expires: one row per unfinished upload, added to users.uploads_bytes in the same
 * transaction. The expiry job releases rows by age (ix_upload_reservations_age), whatever happened
 * to the upload's files, so a crash never leaves bytes reserved for good.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE upload_reservations (
      upload_id ${ID} NOT NULL,
      user_id ${ID} NOT NULL,
      bytes BIGINT NOT NULL,
      created_at DATETIME(3) NOT NULL,
      PRIMARY KEY (upload_id),
      KEY ix_upload_reservations_user (user_id),
      KEY ix_upload_reservations_age (created_at, upload_id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('upload_reservations');
}
