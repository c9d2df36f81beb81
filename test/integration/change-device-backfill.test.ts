import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { createDb, ensureDatabase, type Db } from '../../shared/db/knex';
import { migrationSource } from '../../shared/db/migrations';
import { newId } from '../../shared/ids';

/*
 * The migration that fills resources.change_device_id for rows written before the column existed:
 * the device is taken from what the data proves (a sync op's trace written with the change, the
 * other rows of that same feed position, the uploading device's content folder for a file never
 * changed since), and left '' where nothing does.
 */
const name = `fs_test_${randomBytes(5).toString('hex')}`;
const url = `mysql://root@127.0.0.1:3306/${name}`;
const FIRST_OWN = '20261124000101';
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

test('existing rows get the device the data names, and "" where nothing does', async () => {
  const userId = newId();
  const [synced, folder, child, uploaded, replaced] = [newId(), newId(), newId(), newId(), newId()];
  const [d1, d2, d3] = [newId(), newId(), newId()];
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
  await db('users').insert({ id: userId, username: 'legacy', username_normalized: 'legacy', password_hash: 'x', created_at: at(0), updated_at: at(0) });
  const row = (id: string, extra: Record<string, unknown>) => ({
    id, user_id: userId, parent_id: null, type: 'file', name: `${id}.txt`, size_bytes: 0, created_at: at(1), updated_at: at(1), rev: 1, change_seq: 1, ...extra,
  });
  await db('resources').insert([
    row(synced, { updated_at: at(2), rev: 2, change_seq: 1 }),
    row(folder, { type: 'folder', name: 'dir', updated_at: at(3), deleted_at: at(3), rev: 2, change_seq: 2 }),
    row(uploaded, { storage_key: `${d3}/${uploaded}.txt`, content_sha256: 'a'.repeat(64), change_seq: 3 }),
    row(replaced, { storage_key: `${d3}/${replaced}.1234abcd.txt`, content_sha256: 'b'.repeat(64), updated_at: at(5), rev: 2, change_seq: 4 }),
  ]);
  await db('resources').insert(row(child, { parent_id: folder, updated_at: at(3), deleted_at: at(3), rev: 2, change_seq: 2 }));
  const trace = (deviceId: string, operationId: number, resourceId: string, createdAt: Date, opType: string) => ({
    device_id: deviceId, operation_id: operationId, user_id: userId, op_type: opType, resource_id: resourceId, payload: '{}', created_at: createdAt,
  });
  await db('operation_traces').insert([
    trace(d2, 1, synced, at(1), 'create'),
    trace(d1, 1, synced, at(2), 'update'),
    trace(d2, 2, folder, at(3), 'delete'),
    trace(d1, 2, replaced, at(1), 'update'),
  ]);

  await db.migrate.latest({ migrationSource, tableName: 'knex_migrations' });

  const devices = Object.fromEntries(
    (await db('resources').select<{ id: string; change_device_id: string }[]>('id', 'change_device_id')).map((r) => [r.id, r.change_device_id]),
  );
  expect(devices).toEqual({ [synced]: d1, [folder]: d2, [child]: d2, [uploaded]: d3, [replaced]: '' });
});
