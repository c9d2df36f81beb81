import { NO_DEVICE, OwnerTransactions } from '../../shared/db/owner.transaction';
import { TrashRepository } from '../../shared/db/repositories/trash.repository';
import { newId } from '../../shared/ids';
import { TrashPurger } from '../../shared/lifecycle/trash.purger';
import { createContentStore } from '../../shared/storage/store.factory';
import { Api } from '../support/client';
import { expectError, sha256 } from '../support/fixtures';
import type { TestEnv } from '../support/harness';
import { startStack, type TestStack } from '../support/stack';
import { TusRaw } from '../support/tus';

/* The sync protocol (docs/SYNC-CLIENT.md): revisions in sync results, conditional ops, who changed it. */

let env: TestEnv;
let stack: TestStack;
let api: Api;
let deviceId: string;
let other: Api;
let nextOpId = 5000;

const opId = () => nextOpId++;
const folder = (resourceId: string, name: string, parentId: string | null = null) => ({
  opId: opId(),
  type: 'create',
  resourceId,
  payload: { resourceType: 'folder', name, parentId },
});
const file = (resourceId: string, name: string, parentId: string | null = null, size = 0) => ({
  opId: opId(),
  type: 'create',
  resourceId,
  payload: { resourceType: 'file', name, parentId, size },
});
const rename = (resourceId: string, name: string, baseRev?: unknown) => ({ opId: opId(), type: 'update', resourceId, payload: { name }, ...(baseRev === undefined ? {} : { baseRev }) });
const move = (resourceId: string, parentId: string | null, baseRev?: unknown) => ({ opId: opId(), type: 'move', resourceId, payload: { parentId }, ...(baseRev === undefined ? {} : { baseRev }) });
const remove = (resourceId: string, baseRev?: unknown) => ({ opId: opId(), type: 'delete', resourceId, ...(baseRev === undefined ? {} : { baseRev }) });

const send = (ops: unknown[], client = api) => client.post('/v1/sync/ops', { ops });
const revOf = async (id: string) => Number((await env.db('resources').where({ id }).first('rev')).rev);
const nameOf = async (id: string) => (await env.db('resources').where({ id }).first('name')).name as string;

beforeAll(async () => {
  stack = await startStack();
  ({ env } = stack);
  ({ api, deviceId } = await stack.admin.createUser('protocol'));
  ({ api: other } = await stack.admin.createUser('protocol-other'));
});

afterAll(async () => {
  await stack?.close();
});

describe('revisions in sync results', () => {
  test('every applied entry carries the rev right after its op, as the database holds it', async () => {
    const [f, d] = [newId(), newId()];
    const ops = [folder(d, 'dir'), file(f, 'a.txt'), rename(f, 'b.txt'), move(f, d), rename(f, 'c.txt'), remove(f)];

    const res = await send(ops);

    expect(res.status).toBe(200);
    expect(res.body.failed).toBeNull();
    expect(res.body.applied.map((a: { outcome: string; rev: number }) => [a.outcome, a.rev])).toEqual([
      ['applied', 1],
      ['applied', 1],
      ['applied', 2],
      ['applied', 3],
      ['applied', 4],
      ['applied', 5],
    ]);
    expect(await revOf(f)).toBe(5);
  });

  test('a no-op on an absent id and an op naming no resource carry null; a no-op on a deleted resource its rev', async () => {
    const f = newId();
    await send([file(f, 'gone.txt'), remove(f)]);

    const res = await send([rename(newId(), 'x'), { opId: opId(), type: 'share', payload: {} }, rename(f, 'again.txt'), remove(f)]);

    expect(res.body.applied.map((a: { outcome: string; rev: number | null }) => [a.outcome, a.rev])).toEqual([
      ['noop', null],
      ['noop', null],
      ['noop', 2],
      ['noop', 2],
    ]);
  });

  test('a duplicate carries the rev the resource has now, not the one its first run produced', async () => {
    const f = newId();
    const first = rename(f, 'r1.txt');
    await send([file(f, 'r0.txt'), first, rename(f, 'r2.txt')]);

    const res = await send([first]);

    expect(res.body.applied).toEqual([expect.objectContaining({ outcome: 'duplicate', rev: 3 })]);
  });

  test('a folder deleted with its subtree raises each descendant\'s rev, and later ops of the batch report it', async () => {
    const [d, f] = [newId(), newId()];
    await send([folder(d, 'tree'), file(f, 'leaf.txt', d)]);

    const res = await send([remove(d), rename(f, 'late.txt')]);

    expect(res.body.applied.map((a: { outcome: string; rev: number }) => [a.outcome, a.rev])).toEqual([
      ['applied', 2],
      ['noop', 2],
    ]);
    expect(await revOf(f)).toBe(2);
  });

  test('a failed entry carries the rev as of the failure; null when the caller has no such resource', async () => {
    const [a, b, theirs] = [newId(), newId(), newId()];
    await send([file(a, 'one.txt'), file(b, 'two.txt'), rename(b, 'deux.txt')]);
    await send([file(theirs, 'theirs.txt')], other);

    const clash = await send([rename(b, 'one.txt')]);
    const taken = await send([file(theirs, 'mine.txt')]);

    expect(clash.body.failed).toMatchObject({ resourceId: b, rev: 2, error: { code: 'NAME_CONFLICT' } });
    expect(taken.body.failed).toMatchObject({ resourceId: theirs, rev: null, error: { code: 'INVALID_REQUEST' } });
  });
});

describe('conditional ops', () => {
  test('a stale baseRev stops the batch with PRECONDITION_FAILED and the current rev; earlier ops stay applied', async () => {
    const [f, g, h] = [newId(), newId(), newId()];
    await send([file(f, 'shared.txt'), file(g, 'g.txt'), rename(f, 'renamed-elsewhere.txt')]);

    const res = await send([rename(g, 'g2.txt', 1), rename(f, 'mine.txt', 1), file(h, 'after.txt')]);

    expect(res.body.applied).toEqual([expect.objectContaining({ resourceId: g, outcome: 'applied', rev: 2 })]);
    expect(res.body.failed).toEqual({
      opId: expect.any(Number),
      type: 'update',
      resourceId: f,
      rev: 2,
      error: { code: 'PRECONDITION_FAILED', message: expect.any(String), details: { rev: 2, deleted: false } },
    });
    expect(await nameOf(f)).toBe('renamed-elsewhere.txt');
    expect(await nameOf(g)).toBe('g2.txt');
    expect(await env.db('resources').where({ id: h }).first()).toBeUndefined();
  });

  test('update, move and delete with the current baseRev apply', async () => {
    const [d, f] = [newId(), newId()];
    await send([folder(d, 'target'), file(f, 'cond.txt')]);

    const res = await send([rename(f, 'cond2.txt', 1), move(f, d, 2), remove(f, 3)]);

    expect(res.body.failed).toBeNull();
    expect(res.body.applied.map((a: { rev: number }) => a.rev)).toEqual([2, 3, 4]);
  });

  test('a stale baseRev on a deleted resource says so in details', async () => {
    const f = newId();
    await send([file(f, 'deleted.txt'), remove(f)]);

    const res = await send([move(f, null, 1)]);

    expect(res.body.failed.error).toMatchObject({ code: 'PRECONDITION_FAILED', details: { rev: 2, deleted: true } });
  });

  test('a folder delete with a stale baseRev leaves the file another device just put in it', async () => {
    const [d, f] = [newId(), newId()];
    await send([folder(d, 'shared-dir')]);
    await send([file(f, 'new.txt'), move(f, d)]);
    // The folder's rev did not change when a child arrived, so only the folder's own changes count.
    await send([rename(d, 'shared-dir-2')]);

    const res = await send([remove(d, 1)]);

    expect(res.body.failed.error).toMatchObject({ code: 'PRECONDITION_FAILED', details: { rev: 2, deleted: false } });
    expect((await env.db('resources').where({ id: f }).first('deleted_at')).deleted_at).toBeNull();
  });

  test('baseRev on a resource the caller never had is a no-op, as without it', async () => {
    const theirs = newId();
    await send([file(theirs, 'not-yours.txt')], other);

    const res = await send([rename(newId(), 'x', 7), remove(theirs, 3)]);

    expect(res.body.failed).toBeNull();
    expect(res.body.applied.map((a: { outcome: string; rev: number | null }) => [a.outcome, a.rev])).toEqual([
      ['noop', null],
      ['noop', null],
    ]);
  });

  test.each([[0], [-1], [1.5], ['2'], [null], [true], [{}]])('baseRev %j is INVALID_REQUEST at its place, earlier ops applied', async (bad) => {
    const [a, f] = [newId(), newId()];
    await send([file(f, `bad-${String(bad)}-${f}.txt`)]);

    const res = await send([file(a, `ok-${a}.txt`), rename(f, `x-${f}`, bad)]);

    expect(res.body.applied).toEqual([expect.objectContaining({ resourceId: a, outcome: 'applied' })]);
    expect(res.body.failed).toMatchObject({ resourceId: f, rev: 1, error: { code: 'INVALID_REQUEST' } });
  });

  test('a duplicate is answered as a duplicate whatever its baseRev', async () => {
    const f = newId();
    const op = rename(f, 'dup.txt', 1);
    await send([file(f, 'dup0.txt'), op]);

    const res = await send([{ ...op, baseRev: 1 }]);

    expect(res.body.applied).toEqual([expect.objectContaining({ outcome: 'duplicate', rev: 2 })]);
    expect(res.body.failed).toBeNull();
  });
});

describe('who changed it', () => {
  interface Change {
    id: string;
    deviceId: string;
    deleted: boolean;
    rev: number;
  }

  async function changesSince(client: Api, cursor: string): Promise<Map<string, Change>> {
    const seen = new Map<string, Change>();
    for (;;) {
      const res = await client.get(`/v1/sync/changes?cursor=${encodeURIComponent(cursor)}`);
      expect(res.status).toBe(200);
      for (const item of res.body.items as Change[]) seen.set(item.id, item);
      cursor = res.body.cursor;
      if (!res.body.hasMore) return seen;
    }
  }

  test('every path that changes a resource records the device of its request; the scheduled purge records ""', async () => {
    const a = await stack.admin.createUser('two-devices');
    const second = await new Api(stack.gateway.baseUrl).login('two-devices', 'user-password-1');
    const devA = a.api;
    const devB = second.api;
    const start = (await devA.get('/v1/sync/changes')).body.cursor as string;
    const after = async (id: string) => (await changesSince(devA, start)).get(id)!;

    const synced = newId();
    expect((await send([file(synced, 'synced.txt')], devA)).body.failed).toBeNull();
    expect((await after(synced)).deviceId).toBe(a.deviceId);

    const uploaded = (await devB.upload({}, { name: 'multipart.txt', content: 'from B' })).body.id as string;
    expect((await after(uploaded)).deviceId).toBe(second.deviceId);

    expect((await devA.request('PUT', `/v1/files/${uploaded}/content`, { body: 'from A' })).status).toBe(200);
    expect((await after(uploaded)).deviceId).toBe(a.deviceId);

    const tus = new TusRaw(devB);
    const location = await tus.start(3, { name: 'tus.txt' });
    const done = await tus.patch(location, 0, Buffer.from('tus'));
    expect(done.status).toBe(200);
    expect((await after(done.body.id)).deviceId).toBe(second.deviceId);

    expect((await devA.delete(`/v1/files/${done.body.id}`)).status).toBe(200);
    expect(await after(done.body.id)).toMatchObject({ deleted: true, deviceId: a.deviceId });

    expect((await devB.post(`/v1/trash/${done.body.id}/restore`)).status).toBe(200);
    expect(await after(done.body.id)).toMatchObject({ deleted: false, deviceId: second.deviceId });

    expect((await devB.delete(`/v1/files/${uploaded}`)).status).toBe(200);
    expect((await devA.delete(`/v1/trash/${uploaded}`)).status).toBe(204);
    expect(await after(uploaded)).toMatchObject({ deleted: true, deviceId: a.deviceId });

    expect((await send([remove(synced)], devB)).body.failed).toBeNull();
    const purger = new TrashPurger(new OwnerTransactions(env.db), new TrashRepository(env.db), createContentStore(env.config));
    expect((await purger.purgeExpired(new Date(Date.now() + 1000))).purged).toBeGreaterThan(0);
    expect(await after(synced)).toMatchObject({ deleted: true, deviceId: NO_DEVICE });
  });

  test('a device recognises its own changes in the feed by deviceId and the rev its results reported', async () => {
    const mine = newId();
    const cursor = (await api.get('/v1/sync/changes')).body.cursor as string;
    const res = await send([file(mine, 'own.txt'), rename(mine, 'own2.txt')]);
    const reported = res.body.applied.at(-1).rev as number;

    const item = (await changesSince(api, cursor)).get(mine)!;

    expect(item).toMatchObject({ deviceId, rev: reported });
  });
});

describe('files without content', () => {
  test('a file created by a sync op has its declared size and no sha256 until content is sent; POST /files with id creates one with content', async () => {
    const [empty, full] = [newId(), newId()];
    await send([file(empty, 'declared.bin', null, 42)]);

    const meta = await api.get(`/v1/files/${empty}`);
    const content = await api.get(`/v1/files/${empty}/content`);
    const uploaded = await api.upload({ id: full }, { name: 'with-content.txt', content: 'bytes' });

    expect(meta.body).toMatchObject({ id: empty, size: 42, rev: 1 });
    expect(meta.body).not.toHaveProperty('sha256');
    expectError(content, 404, 'NOT_FOUND');
    expect(uploaded.status).toBe(201);
    expect(uploaded.body).toMatchObject({ id: full, size: 5, sha256: sha256('bytes'), rev: 1 });
  });
});
