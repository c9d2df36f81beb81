import type { Knex } from 'knex';

export const name = '20261124000501_add_user_quota_and_usage';

/*
 * A user's quota and the bytes they hold, by kind, on the owner's row: every write that moves bytes
 * already locks that row (owner.transaction.ts), so the counters change in the same transaction and
 * in the same statement that stores the feed position, and GET /users/me/usage is one primary-key read.
 * - quota_bytes: NULL for none.
 * - files_bytes, trash_bytes: content of active files, of files in the trash (not purged).
 * - versions_bytes: content of kept versions (file_versions).
 * - uploads_bytes: declared Upload-Length of unfinished resumable uploads (upload_reservations).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `ALTER TABLE users
       ADD COLUMN quota_bytes BIGINT NULL,
       ADD COLUMN files_bytes BIGINT NOT NULL DEFAULT 0,
       ADD COLUMN trash_bytes BIGINT NOT NULL DEFAULT 0,
       ADD COLUMN versions_bytes BIGINT NOT NULL DEFAULT 0,
       ADD COLUMN uploads_bytes BIGINT NOT NULL DEFAULT 0`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    `ALTER TABLE users
       DROP COLUMN uploads_bytes,
       DROP COLUMN versions_bytes,
       DROP COLUMN trash_bytes,
       DROP COLUMN files_bytes,
       DROP COLUMN quota_bytes`,
  );
}
