import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { createDb, ensureDatabase, type Db } from '../../shared/db/knex';
import { migrationSource } from '../../shared/db/migrations';
import { newId } from '../../shared/ids';

/*
 * Devices got a kind after app passwords had devices of their own: the migration names those
 * devices `app_password` and every other one `client`; its down step removes the column again.
 */
const name = `fs_test_${randomBytes(5).toString('hex')}`;
const url = `mysql://root@127.0.0.1:3306/${name}`;
const FIRST_OWN = '20261127000101';
let db: Db;

type Migration = { name: string };
const before: Knex.MigrationSource<Migration> = {
  ...(migrationSource as unknown as Knex.MigrationSource<Migration>),
  getMigrations: async (ext) => ((await migrationSource.getMigrations(ext)) as Migration[]).filter((m) => m.name < FIRST_OWN),
};

beforeAll(async () => {
  await ensureDatabase(url);
  db = createDb(url);
  await db.migrate.latest({ migrationSource: before, tableName: 'knex_migrations' });
});

afterAll(async () => {
  await db.raw(`DROP DATABASE IF EXISTS \`${name}\``).catch(() => undefined);
  await db.destroy();
});

test('devices of app passwords become app_password devices, every other one a client', async () => {
  const at = new Date(Date.UTC(2026, 0, 1));
  const userId = newId();
  const [laptop, davDevice] = [newId(), newId()];
  await db('users').insert({ id: userId, username: 'legacy', username_normalized: 'legacy', password_hash: 'x', created_at: at, updated_at: at });
  await db('devices').insert([
    { id: laptop, name: 'laptop', user_id: userId, created_at: at },
    { id: davDevice, name: 'rclone', user_id: userId, created_at: at },
  ]);
  await db('app_passwords').insert({ id: newId(), user_id: userId, device_id: davDevice, name: 'rclone', password_hash: 'a'.repeat(64), created_at: at });

  await db.migrate.latest({ migrationSource, tableName: 'knex_migrations' });
  const kinds = Object.fromEntries((await db('devices').select('id', 'kind')).map((r: { id: string; kind: string }) => [r.id, r.kind]));
  expect(kinds).toEqual({ [laptop]: 'client', [davDevice]: 'app_password' });

  await db.migrate.rollback({ migrationSource, tableName: 'knex_migrations' }, false);
  // Rolling back the last batch removes the column with everything after it.
  expect(await db.schema.hasColumn('devices', 'kind')).toBe(false);
});
