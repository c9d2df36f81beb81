import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import { expectError, insertFile, insertFolder, ISO_MS } from '../support/fixtures';
import { ADMIN, type RunningGateway, type TestEnv } from '../support/harness';
import {
  changesSince,
  createFolder,
  deleteBySync,
  deleteFile,
  feedCursorNow,
  resourceRow,
  uploadFile,
} from '../support/lifecycle';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { startStack, type TestStack } from '../support/stack';

/** GET /v1/trash, POST /v1/trash/:id/restore and DELETE /v1/trash/:id (docs/ARCHITECTURE.md, "The trash"). */
let env: TestEnv;
let gateway: RunningGateway;
let stack: TestStack;
let api: Api;
let userId: string;
let other: { api: Api; userId: string };

const at = (second: number) => new Date(Date.UTC(2021, 0, 1, 0, 0, second));

beforeAll(async () => {
  stack = await startStack();
  ({ env, gateway } = stack);
  ({ api, userId } = await stack.admin.createUser('trasher'));
  other = await stack.admin.createUser('neighbour');
});

afterAll(async () => {
  await stack?.close();
});

describe('GET /v1/trash', () => {
  let lister: { api: Api; userId: string };
  const seeded: Record<string, string> = {};

  beforeAll(async () => {
    const { api: admin } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
    lister = await admin.createUser('lister');
    const u = lister.userId;
    seeded.folder = await insertFolder(env.db, u, 'Old folder', null, { createdAt: at(0), deletedAt: at(10) });
    seeded.child = await insertFile(env.db, u, 'inside.txt', seeded.folder, { createdAt: at(0), size: 7, deletedAt: at(10) });
    seeded.newest = await insertFile(env.db, u, 'newest.txt', null, { createdAt: at(1), size: 3, deletedAt: at(30) });
    seeded.middle = await insertFile(env.db, u, 'middle.txt', null, { createdAt: at(2), size: 5, mimeType: null, deletedAt: at(20) });
    seeded.active = await insertFile(env.db, u, 'active.txt', null, { createdAt: at(3) });
    seeded.purged = await insertFile(env.db, u, 'purged.txt', null, { createdAt: at(4), deletedAt: at(40) });
    await env.db('resources').where({ id: seeded.purged }).update({ purged_at: at(50) });
    // Someone else's trash is never shown.
    await insertFile(env.db, other.userId, 'not-yours.txt', null, { deletedAt: at(35) });
  });

  test('lists the caller’s deleted, unpurged resources, newest deletion first, id breaking ties, contents of deleted folders included', async () => {
    const res = await lister.api.get('/v1/trash');
    expect(res.status).toBe(200);
    const sameTime = [seeded.folder!, seeded.child!].sort();
    expect(res.body.items.map((i: { id: string }) => i.id)).toEqual([seeded.newest, seeded.middle, ...sameTime]);
    expect(res.body).toMatchObject({ total: 4, limit: 50, offset: 0 });
  });

  test('each item is the File or Folder representation plus type and deletedAt', async () => {
    const res = await lister.api.get('/v1/trash');
    const byId = new Map(res.body.items.map((i: { id: string }) => [i.id, i]));
    expect(byId.get(seeded.middle)).toEqual({
      id: seeded.middle,
      name: 'middle.txt',
      size: 5,
      mimeType: '',
      folderId: '',
      createdAt: at(2).toISOString(),
      updatedAt: at(2).toISOString(),
      rev: 1,
      type: 'file',
      deletedAt: at(20).toISOString(),
    });
    expect(byId.get(seeded.folder)).toEqual({
      id: seeded.folder,
      name: 'Old folder',
      parentId: '',
      createdAt: at(0).toISOString(),
      updatedAt: at(0).toISOString(),
      rev: 1,
      type: 'folder',
      deletedAt: at(10).toISOString(),
    });
    expect(byId.get(seeded.child)).toMatchObject({ type: 'file', folderId: seeded.folder, deletedAt: expect.stringMatching(ISO_MS) });
  });

  test('pages follow the paging rules: limit and offset, total of all matches, pages that neither overlap nor skip', async () => {
    const all = (await lister.api.get('/v1/trash')).body.items.map((i: { id: string }) => i.id);
    const first = await lister.api.get('/v1/trash?limit=3&offset=0');
    const second = await lister.api.get('/v1/trash?limit=3&offset=3');
    expect(first.body).toMatchObject({ total: 4, limit: 3, offset: 0 });
    expect(second.body).toMatchObject({ total: 4, limit: 3, offset: 3 });
    expect([...first.body.items, ...second.body.items].map((i: { id: string }) => i.id)).toEqual(all);
    expect((await lister.api.get('/v1/trash?limit=5000')).body.limit).toBe(1000);
    const past = await lister.api.get('/v1/trash?offset=10');
    expect(past.body).toEqual({ items: [], total: 4, limit: 50, offset: 10 });
  });

  test('a bad limit or offset is 400, and without a token 401', async () => {
    for (const q of ['limit=0', 'limit=-1', 'limit=1.5', 'offset=-1', 'offset=x']) expectError(await lister.api.get(`/v1/trash?${q}`), 400, 'INVALID_REQUEST');
    expectError(await new Api(gateway.baseUrl).get('/v1/trash'), 401, 'UNAUTHORIZED');
  });

  test('another user sees only their own trash', async () => {
    const res = await other.api.get('/v1/trash');
    expect(res.body.items.map((i: { name: string }) => i.name)).toEqual(['not-yours.txt']);
  });
});

describe('POST /v1/trash/:id/restore', () => {
  test('restores a deleted file into its folder, with its content, a new rev and a feed entry', async () => {
    const folderId = await createFolder(api, 'Keep');
    const file = await uploadFile(api, 'back.txt', 'restored bytes', folderId);
    await deleteFile(api, file.id);
    const cursor = await feedCursorNow(api);

    const res = await api.post(`/v1/trash/${file.id}/restore`);

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: file.id, name: 'back.txt', folderId, size: 14, rev: 3, type: 'file' });
    expect((await api.get(`/v1/files/${file.id}`)).body.rev).toBe(3);
    expect((await api.get(`/v1/files/${file.id}/content`)).text).toBe('restored bytes');
    expect((await api.get('/v1/trash')).body.items.map((i: { id: string }) => i.id)).not.toContain(file.id);
    const change = (await changesSince(api, cursor)).get(file.id);
    expect(change).toMatchObject({ deleted: false, rev: 3, parentId: folderId });
  });

  test('restores a folder tree, every level deleted with it, but not what was deleted on its own before', async () => {
    const top = await createFolder(api, 'Tree');
    const mid = await createFolder(api, 'mid', top);
    const deep = await createFolder(api, 'deep', mid);
    const deepest = await createFolder(api, 'deepest', deep);
    const leaf = await uploadFile(api, 'leaf.txt', 'leaf', deepest);
    const side = await uploadFile(api, 'side.txt', 'side', mid);
    const earlier = await uploadFile(api, 'earlier.txt', 'gone before', deep);
    await deleteFile(api, earlier.id);
    await deleteBySync(api, top);
    const tree = [top, mid, deep, deepest, leaf.id, side.id];
    const before = new Map(await Promise.all(tree.map(async (id) => [id, await resourceRow(env, id)] as const)));
    expect([...before.values()].every((r) => r.deleted_at !== null)).toBe(true);
    const cursor = await feedCursorNow(api);

    const res = await api.post(`/v1/trash/${top}/restore`);

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: top, name: 'Tree', parentId: '', type: 'folder' });
    const changes = await changesSince(api, cursor);
    for (const id of tree) {
      const row = await resourceRow(env, id);
      expect({ id, deleted: row.deleted_at }).toEqual({ id, deleted: null });
      expect(row.rev).toBe(before.get(id)!.rev + 1);
      expect(changes.get(id)).toMatchObject({ deleted: false, rev: row.rev });
    }
    expect((await resourceRow(env, earlier.id)).deleted_at).not.toBeNull();
    expect(changes.has(earlier.id)).toBe(false);
    expect((await api.get('/v1/trash')).body.items.map((i: { id: string }) => i.id)).toContain(earlier.id);
    expect((await api.get(`/v1/files/${leaf.id}/content`)).text).toBe('leaf');
  });

  test('restores at the root when the old parent is no longer active', async () => {
    const parent = await createFolder(api, 'Doomed');
    const file = await uploadFile(api, 'orphaned.txt', 'x', parent);
    await deleteFile(api, file.id);
    await deleteBySync(api, parent);

    const res = await api.post(`/v1/trash/${file.id}/restore`);

    expect(res.status).toBe(200);
    expect(res.body.folderId).toBe('');
    expect((await resourceRow(env, file.id)).parent_id).toBeNull();
    expect((await api.get('/v1/files')).body.items.map((i: { id: string }) => i.id)).toContain(file.id);
    // The parent itself stays in the trash.
    expect((await resourceRow(env, parent)).deleted_at).not.toBeNull();
  });

  test('a name clash with an active sibling is 409 NAME_CONFLICT and nothing is restored', async () => {
    const top = await createFolder(api, 'Clash');
    const sub = await createFolder(api, 'sub', top);
    const inner = await uploadFile(api, 'same.txt', 'old', sub);
    await deleteBySync(api, top);
    // An active resource holding the name inside the deleted tree, which only a restore would reach.
    await insertFile(env.db, userId, 'same.txt', sub);
    const rows = async () => Promise.all([top, sub, inner.id].map((id) => resourceRow(env, id)));
    const before = await rows();
    const seqBefore = (await env.db('users').where({ id: userId }).first('change_seq')).change_seq;

    expectError(await api.post(`/v1/trash/${top}/restore`), 409, 'NAME_CONFLICT');

    expect(await rows()).toEqual(before);
    expect((await env.db('users').where({ id: userId }).first('change_seq')).change_seq).toBe(seqBefore);

    // And at the top: an active folder now holds the restored folder's name.
    const again = await createFolder(api, 'Again');
    await deleteBySync(api, again);
    await createFolder(api, 'Again');
    expectError(await api.post(`/v1/trash/${again}/restore`), 409, 'NAME_CONFLICT');
    expect((await resourceRow(env, again)).deleted_at).not.toBeNull();
  });

  test('what is not in the caller’s trash is 404: active, absent, malformed, purged, another user’s', async () => {
    const active = await uploadFile(api, 'alive.txt', 'a');
    const purged = await uploadFile(api, 'purged-once.txt', 'p');
    await deleteFile(api, purged.id);
    expect((await api.delete(`/v1/trash/${purged.id}`)).status).toBe(204);
    const theirs = await uploadFile(other.api, 'theirs.txt', 't');
    await deleteFile(other.api, theirs.id);

    for (const id of [active.id, newId(), 'not-an-id', purged.id, theirs.id]) {
      expectError(await api.post(`/v1/trash/${id}/restore`), 404, 'NOT_FOUND');
      expectError(await api.delete(`/v1/trash/${id}`), 404, 'NOT_FOUND');
    }
    // The other user's deleted file is untouched, still theirs to restore.
    expect((await resourceRow(env, theirs.id)).purged_at).toBeNull();
    expect((await other.api.post(`/v1/trash/${theirs.id}/restore`)).status).toBe(200);
  });
});

/** The purge is where the trash meets the content store: it runs on each driver. */
describe.each(DRIVERS)('DELETE /v1/trash/:id on the %s driver', (driver) => {
  let stack: TestStack;
  let env: TestEnv;
  let api: Api;
  let stored: StoredContent;

  beforeAll(async () => {
    stack = await startStack(onDriver(driver));
    env = stack.env;
    stored = new StoredContent(env);
    ({ api } = await stack.admin.createUser('purger'));
  });

  afterAll(async () => {
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await stack?.close();
  });

  test('purges a file: its content leaves the store, it leaves the trash, and the feed keeps it as deleted with a new rev', async () => {
    const file = await uploadFile(api, 'purge-me.txt', 'bytes to reclaim');
    const { storage_key: key } = await resourceRow(env, file.id);
    await deleteFile(api, file.id);
    expect(await stored.exists(key!)).toBe(true);
    const cursor = await feedCursorNow(api);

    const res = await api.delete(`/v1/trash/${file.id}`);

    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(await stored.exists(key!)).toBe(false);
    const row = await resourceRow(env, file.id);
    expect(row).toMatchObject({ storage_key: null, rev: 3 });
    expect(row.purged_at).not.toBeNull();
    expect(row.deleted_at).not.toBeNull();
    expect((await api.get('/v1/trash')).body.items.map((i: { id: string }) => i.id)).not.toContain(file.id);
    expect((await changesSince(api, cursor)).get(file.id)).toMatchObject({ deleted: true, rev: 3 });
    expectError(await api.post(`/v1/trash/${file.id}/restore`), 404, 'NOT_FOUND');
  });

  test('purges a folder with what was deleted with it, and leaves what was deleted before on its own', async () => {
    const top = await createFolder(api, 'Purge tree');
    const sub = await createFolder(api, 'sub', top);
    const a = await uploadFile(api, 'a.txt', 'aaa', sub);
    const b = await uploadFile(api, 'b.txt', 'bbb', top);
    const alone = await uploadFile(api, 'alone.txt', 'on its own', sub);
    await deleteFile(api, alone.id);
    await deleteBySync(api, top);
    const keys = await Promise.all([a.id, b.id, alone.id].map(async (id) => (await resourceRow(env, id)).storage_key!));
    const cursor = await feedCursorNow(api);

    expect((await api.delete(`/v1/trash/${top}`)).status).toBe(204);

    expect(await stored.exists(keys[0]!)).toBe(false);
    expect(await stored.exists(keys[1]!)).toBe(false);
    expect(await stored.exists(keys[2]!)).toBe(true);
    const changes = await changesSince(api, cursor);
    for (const id of [top, sub, a.id, b.id]) {
      expect((await resourceRow(env, id)).purged_at).not.toBeNull();
      expect(changes.get(id)).toMatchObject({ deleted: true });
    }
    expect((await resourceRow(env, alone.id)).purged_at).toBeNull();
    expect(changes.has(alone.id)).toBe(false);
  });
});
