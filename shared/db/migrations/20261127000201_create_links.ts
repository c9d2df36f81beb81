import type { Knex } from 'knex';

export const name = '20261127000201_create_links';

const ID = 'CHAR(32) CHARACTER SET ascii COLLATE ascii_bin';
// As resources.id, which the foreign key names.
const TREE_ID = 'VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin';

/*
 * Share links (docs/LINKS.md). `token` is the public secret of the link (base64url of 144 random
 * bits), unique, so a public request finds its link with one indexed lookup; the owner reads it back
 * in the link's representation. `password_hash` is Argon2id, as logins; `password_gen` grows with
 * every change of the password, and the access strings an unlock hands out are bound to it, so they
 * stop working when it changes. `downloads` only grows, and never past `max_downloads`. Each link has
 * a device of its own (kind `link`), which changes made through it carry in the change feed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE links (
      id ${ID} NOT NULL,
      user_id ${ID} NOT NULL,
      device_id ${ID} NOT NULL,
      resource_id ${TREE_ID} NOT NULL,
      token VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      access ENUM('read','upload') NOT NULL,
      password_hash VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NULL,
      password_gen INT UNSIGNED NOT NULL DEFAULT 0,
      expires_at DATETIME(3) NULL,
      max_downloads INT UNSIGNED NULL,
      downloads INT UNSIGNED NOT NULL DEFAULT 0,
      created_at DATETIME(3) NOT NULL,
      PRIMARY KEY (id),
      UNIQUE KEY uq_links_token (token),
      KEY ix_links_user (user_id, created_at, id),
      KEY ix_links_resource (resource_id),
      CONSTRAINT fk_links_user FOREIGN KEY (user_id) REFERENCES users (id),
      CONSTRAINT fk_links_device FOREIGN KEY (device_id) REFERENCES devices (id),
      CONSTRAINT fk_links_resource FOREIGN KEY (resource_id) REFERENCES resources (id) ON DELETE CASCADE
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('links');
}
