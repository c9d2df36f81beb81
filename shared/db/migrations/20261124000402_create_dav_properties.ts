import type { Knex } from 'knex';

export const name = '20261124000402_create_dav_properties';

const ID = 'CHAR(32) CHARACTER SET ascii COLLATE ascii_bin';
const TREE_ID = 'VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin';

/*
 * WebDAV dead properties (PROPPATCH), kept with their resource. `prop_key` is the SHA-256 (hex) of
 * "<namespace> <local name>", a fixed-width key however long a namespace URI is; `value` is the
 * property element as JSON (services/gateway/dav/dav.xml.ts), at most 64 KiB of XML each. A resource
 * in the trash keeps them for a restore; a purge removes them (shared/db/repositories/trash.repository.ts), and
 * a removed resource row takes them along (ON DELETE CASCADE).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE dav_properties (
      resource_id ${TREE_ID} NOT NULL,
      prop_key CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      user_id ${ID} NOT NULL,
      namespace VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      local_name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      value MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      PRIMARY KEY (resource_id, prop_key),
      CONSTRAINT fk_dav_properties_resource FOREIGN KEY (resource_id) REFERENCES resources (id) ON DELETE CASCADE
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('dav_properties');
}
