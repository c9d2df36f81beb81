import type { Knex } from 'knex';

export const name = '20261124000401_create_app_passwords';

const ID = 'CHAR(32) CHARACTER SET ascii COLLATE ascii_bin';

/*
 * App passwords for stock WebDAV clients. `password_hash` is the HMAC-SHA256 (hex) of the password
 * (services/gateway/app-passwords/app-password.secret.ts explains why a keyed hash, not Argon2); it
 * is unique, so a Basic credential is checked with one indexed lookup. Each password has a device of
 * its own, which the changes made with it carry in the change feed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE app_passwords (
      id ${ID} NOT NULL,
      user_id ${ID} NOT NULL,
      device_id ${ID} NOT NULL,
      name VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      password_hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      created_at DATETIME(3) NOT NULL,
      last_used_at DATETIME(3) NULL,
      PRIMARY KEY (id),
      UNIQUE KEY uq_app_passwords_hash (password_hash),
      KEY ix_app_passwords_user (user_id, created_at, id),
      CONSTRAINT fk_app_passwords_user FOREIGN KEY (user_id) REFERENCES users (id),
      CONSTRAINT fk_app_passwords_device FOREIGN KEY (device_id) REFERENCES devices (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('app_passwords');
}
