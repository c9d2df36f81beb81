import IORedis from 'ioredis';
import { NO_DEVICE, OwnerTransactions } from '../../shared/db/owner.transaction';
import { ResourceRepository } from '../../shared/db/repositories/resource.repository';
import { newId } from '../../shared/ids';
import { FEED_RECHECK_MS } from '../../services/gateway/changes/change.hub';
import { Api } from '../support/client';
import { expectError, ISO_MS } from '../support/fixtures';
import type { RunningGateway, TestEnv } from '../support/harness';
import { startStack, type TestStack } from '../support/stack';

let env: TestEnv;
let gateway: RunningGateway;
let stack: TestStack;
let admin: Api;
let nextOpId = 1;

interface Change {
  id: string;
  type: 'file' | 'folder';
  name: string;
  parentId: string;
  deleted: boolean;
  rev: number;
  updatedAt: string;
  size?: number;
  mimeType?: string;
  sha256?: string;
}

interface FeedPage {
  items: Change[];
  cursor: string;
  hasMore: boolean;
}

const op = (type: string, resourceId: string, payload?: unknown) => ({ opId: nextOpId++, type, resourceId, payload });
const createFolder = (id: string, name: string, parentId: string | null = null) => op('create', id, { resourceType: 'folder', name, parentId });
const createFile = (id: string, name: string, parentId: string | null = null) =>
  op('create', id, { resourceType: 'file', name, parentId, size: 3, mimeType: 'text/plain' });

async function sync(api: Api, ops: unknown[]): Promise<void> {
  const res = await api.post('/v1/sync/ops', { ops });
  expect({ status: res.status, failed: res.body.failed }).toEqual({ status: 200, failed: null });
}

async function feed(api: Api, query: Record<string, string | number> = {}): Promise<FeedPage> {
  const res = await api.get(`/v1/sync/changes?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]))}`);
  expect(res.status).toBe(200);
  return res.body as FeedPage;
}

/** Follows the feed from `cursor` until it has nothing more, `limit` at a time. */
async function drain(api: Api, cursor: string | undefined, limit = 500): Promise<{ items: Change[]; cursor: string }> {
  const items: Change[] = [];
  for (;;) {
    const page = await feed(api, cursor === undefined ? { limit } : { cursor, limit });
    items.push(...page.items);
    cursor = page.cursor;
    if (!page.hasMore) return { items, cursor };
  }
}

let userCount = 0;
const newUser = () => admin.createUser(`feeder-${++userCount}`);

beforeAll(async () => {
  stack = await startStack({ FEED_MAX_HELD_PER_USER: '3' });
  ({ env, gateway } = stack);
  admin = stack.admin;
});

afterAll(async () => {
  await stack?.close();
});

describe('revisions', () => {
  test('rev is 1 at creation and grows by one with each rename, move and delete, in every representation', async () => {
    const { api } = await newUser();
    const [folder, file] = [newId(), newId()];
    await sync(api, [createFolder(folder, 'box'), createFile(file, 'a.txt')]);
    expect((await api.get(`/v1/files/${file}`)).body.rev).toBe(1);
    expect((await api.get('/v1/folders')).body.items[0].rev).toBe(1);

    await sync(api, [op('update', file, { name: 'b.txt' })]);
    expect((await api.get(`/v1/files/${file}`)).body.rev).toBe(2);
    await sync(api, [op('move', file, { parentId: folder })]);
    expect((await api.get(`/v1/files?folderId=${folder}`)).body.items[0].rev).toBe(3);
    const snapshot = await api.get('/v1/sync/permissions');
    expect(snapshot.body.items.find((i: { id: string }) => i.id === file).rev).toBe(3);

    await sync(api, [op('delete', folder)]);
    const rows = await env.db('resources').whereIn('id', [folder, file]).select('id', 'rev');
    expect(Object.fromEntries(rows.map((r: { id: string; rev: number }) => [r.id, r.rev]))).toEqual({ [folder]: 2, [file]: 4 });
  });
});

describe('the change feed', () => {
  test('without a cursor it lists the active resources in commit order, in the Change shape, leaving out deleted ones', async () => {
    const { api, deviceId } = await newUser();
    const [folder, file, gone] = [newId(), newId(), newId()];
    await sync(api, [createFolder(folder, 'docs')]);
    await sync(api, [createFile(file, 'n.txt', folder), createFile(gone, 'gone.txt')]);
    await sync(api, [op('delete', gone)]);

    const page = await feed(api);

    expect(page.hasMore).toBe(false);
    expect(page.items).toEqual([
      { id: folder, type: 'folder', name: 'docs', parentId: '', deleted: false, rev: 1, updatedAt: expect.stringMatching(ISO_MS), deviceId },
      { id: file, type: 'file', name: 'n.txt', parentId: folder, deleted: false, rev: 1, updatedAt: expect.stringMatching(ISO_MS), size: 3, mimeType: 'text/plain', deviceId },
    ]);
    expect(typeof page.cursor).toBe('string');
  });

  test('with a cursor it shows every change since, deletions as deleted: true, each resource once at its latest state', async () => {
    const { api } = await newUser();
    const [a, b] = [newId(), newId()];
    await sync(api, [createFile(a, 'a.txt'), createFile(b, 'b.txt')]);
    const { cursor } = await drain(api, undefined);

    await sync(api, [op('update', a, { name: 'a2.txt' })]);
    await sync(api, [op('update', a, { name: 'a3.txt' }), op('delete', b)]);
    const page = await feed(api, { cursor });

    expect(page.items.map((i) => [i.id, i.name, i.deleted, i.rev])).toEqual([
      [a, 'a3.txt', false, 3],
      [b, 'b.txt', true, 2],
    ]);
    expect(await feed(api, { cursor: page.cursor })).toEqual({ items: [], cursor: page.cursor, hasMore: false });
  });

  test('a deleted folder shows each resource of its subtree as its own deleted item', async () => {
    const { api } = await newUser();
    const [top, mid, leaf, file] = [newId(), newId(), newId(), newId()];
    await sync(api, [createFolder(top, 'top'), createFolder(mid, 'mid', top), createFolder(leaf, 'leaf', mid), createFile(file, 'f.txt', leaf)]);
    const { cursor } = await drain(api, undefined);

    await sync(api, [op('delete', top)]);
    const page = await feed(api, { cursor });

    expect(page.items.map((i) => i.id).sort()).toEqual([top, mid, leaf, file].sort());
    expect(page.items.every((i) => i.deleted)).toBe(true);
  });

  test('uploads and the file delete endpoint appear in the feed like sync ops', async () => {
    const { api } = await newUser();
    const { cursor } = await feed(api);
    const up = await api.upload({}, { name: 'photo.jpg', content: Buffer.from('jpeg bytes'), type: 'image/jpeg' });
    expect(up.status).toBe(201);

    const created = await feed(api, { cursor });
    expect(created.items).toEqual([expect.objectContaining({ id: up.body.id, deleted: false, rev: 1, sha256: up.body.sha256, size: 10, mimeType: 'image/jpeg' })]);

    expect((await api.delete(`/v1/files/${up.body.id}`)).status).toBe(200);
    const deleted = await feed(api, { cursor: created.cursor });
    expect(deleted.items).toEqual([expect.objectContaining({ id: up.body.id, deleted: true, rev: 2 })]);
  });

  test('paging with limit=1 visits every resource exactly once, with hasMore until the end', async () => {
    const { api } = await newUser();
    const ids = Array.from({ length: 5 }, () => newId());
    await sync(api, ids.map((id, i) => createFile(id, `f${i}`)));

    const pages: FeedPage[] = [];
    let cursor: string | undefined;
    do {
      const page = await feed(api, cursor === undefined ? { limit: 1 } : { cursor, limit: 1 });
      pages.push(page);
      cursor = page.cursor;
    } while (pages[pages.length - 1]!.hasMore);

    expect(pages.map((p) => p.items.length)).toEqual([1, 1, 1, 1, 1]);
    expect(pages.map((p) => p.items[0]!.id)).toEqual(ids);
  });

  test('a change made while a reader pages through is still delivered, and nothing is repeated unchanged', async () => {
    const { api } = await newUser();
    const ids = Array.from({ length: 4 }, () => newId());
    await sync(api, ids.map((id, i) => createFile(id, `p${i}`)));
    const first = await feed(api, { limit: 2 });
    // The first item, already read, changes; the reader must see it again, once, at the end.
    await sync(api, [op('update', ids[0]!, { name: 'p0-renamed' })]);

    const rest = await drain(api, first.cursor, 2);

    expect(rest.items.map((i) => i.id)).toEqual([ids[2], ids[3], ids[0]]);
    expect(rest.items[2]!.name).toBe('p0-renamed');
  });

  test.each([['0'], ['-1'], ['1.5'], ['abc'], ['']])('limit=%p is refused with 400', async (limit) => {
    const { api } = await newUser();
    expectError(await api.get(`/v1/sync/changes?limit=${limit}`), 400, 'INVALID_REQUEST');
  });

  test('a limit above 1000 is clamped to 1000', async () => {
    const { api } = await newUser();
    const ids = Array.from({ length: 1002 }, () => newId());
    await sync(api, ids.slice(0, 1000).map((id, i) => createFile(id, `c${i}`)));
    await sync(api, ids.slice(1000).map((id, i) => createFile(id, `d${i}`)));
    const page = await feed(api, { limit: 5000 });
    expect(page.items).toHaveLength(1000);
    expect(page.hasMore).toBe(true);
  });

  test.each([['61'], ['-1'], ['0.5'], ['x']])('wait=%p is refused with 400', async (wait) => {
    const { api } = await newUser();
    expectError(await api.get(`/v1/sync/changes?wait=${wait}`), 400, 'INVALID_REQUEST');
  });

  test("a cursor that was altered, invented or issued to another user is refused with 400", async () => {
    const [{ api: mine }, { api: theirs }] = [await newUser(), await newUser()];
    const { cursor } = await feed(theirs);
    expectError(await mine.get(`/v1/sync/changes?cursor=${cursor}`), 400, 'INVALID_REQUEST');
    const mineCursor = (await feed(mine)).cursor;
    const flipped = mineCursor.slice(0, 3) + (mineCursor[3] === 'A' ? 'B' : 'A') + mineCursor.slice(4);
    expectError(await mine.get(`/v1/sync/changes?cursor=${flipped}`), 400, 'INVALID_REQUEST');
    expectError(await mine.get('/v1/sync/changes?cursor=MTAwMC4uMA'), 400, 'INVALID_REQUEST');
    expectError(await mine.get(`/v1/sync/changes?cursor=${'x'.repeat(300)}`), 400, 'INVALID_REQUEST');
  });

  test("a user's feed never shows another user's resources", async () => {
    const [{ api: mine }, { api: theirs }] = [await newUser(), await newUser()];
    const secret = newId();
    await sync(theirs, [createFile(secret, 'secret.txt')]);
    const all = await drain(mine, undefined);
    expect(all.items.map((i) => i.id)).not.toContain(secret);
  });
});

/**
 * A new user's feed request held for 30 s, then a change of that user whose notification is lost:
 * committed without telling anyone.
 */
async function unannouncedWhileHeld(): Promise<{ held: Promise<FeedPage>; id: string }> {
  const { api, userId } = await newUser();
  const { cursor } = await feed(api);
  const held = feed(api, { cursor, wait: 30 });
  await new Promise((r) => setTimeout(r, 300));
  return { held, id: await commitUnannounced(userId) };
}

/** A change of `userId` committed without telling anyone; resolves with the new resource's id. */
async function commitUnannounced(userId: string): Promise<string> {
  const id = newId();
  await new OwnerTransactions(env.db).run({ userId, deviceId: NO_DEVICE }, (trx, clock) =>
    new ResourceRepository(trx).insert({
      id, userId, parentId: null, type: 'folder', name: 'unannounced', sizeBytes: 0, mimeType: null,
      extension: null, storageKey: null, contentSha256: null, createdAt: new Date(), change: clock.next(),
    }),
  );
  return id;
}

/** Closes the gateway's change-feed subscription from Redis's side; the gateway reconnects. */
async function killSubscription(): Promise<void> {
  const redis = new IORedis('redis://127.0.0.1:6379');
  try {
    const clients = (await redis.client('LIST')) as string;
    const mine = clients.split('\n').filter((line) => line.includes(` name=${env.name}-change-feed `));
    expect(mine).toHaveLength(1);
    await redis.client('KILL', 'ID', /\bid=(\d+)/.exec(mine[0]!)![1]!);
  } finally {
    redis.disconnect();
  }
}

describe('long poll', () => {
  test('a held request is answered as soon as a change of its user commits', async () => {
    const { api } = await newUser();
    const { cursor } = await feed(api);
    const started = Date.now();
    const held = feed(api, { cursor, wait: 20 });
    await new Promise((r) => setTimeout(r, 200));
    const id = newId();
    await sync(api, [createFolder(id, 'wake')]);

    const page = await held;

    expect(page.items.map((i) => i.id)).toEqual([id]);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  test("another user's change does not answer a held request, which ends after wait with no items and the same cursor", async () => {
    const [{ api }, { api: other }] = [await newUser(), await newUser()];
    const { cursor } = await feed(api);
    const started = Date.now();
    const held = feed(api, { cursor, wait: 1 });
    await sync(other, [createFolder(newId(), 'not yours')]);

    expect(await held).toEqual({ items: [], cursor, hasMore: false });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  test('a change already committed before the request answers at once, without holding it', async () => {
    const { api } = await newUser();
    const { cursor } = await feed(api);
    await sync(api, [createFolder(newId(), 'early')]);
    const page = await feed(api, { cursor, wait: 30 });
    expect(page.items).toHaveLength(1);
  });

  test('held requests of one user beyond FEED_MAX_HELD_PER_USER get 429 with Retry-After', async () => {
    const { api } = await newUser();
    const { cursor } = await feed(api);
    const held = [1, 2, 3].map(() => feed(api, { cursor, wait: 3 }));
    await new Promise((r) => setTimeout(r, 300));
    expect(gateway.changes.held).toBeGreaterThanOrEqual(3);

    const refused = await api.get(`/v1/sync/changes?cursor=${cursor}&wait=3`);

    expectError(refused, 429, 'RATE_LIMITED');
    expect(refused.headers.get('retry-after')).toBe('1');
    await Promise.all(held);
  });

  test('after the subscription reconnects, held requests read the feed again instead of waiting out their time', async () => {
    const { held, id } = await unannouncedWhileHeld();
    const started = Date.now();
    await killSubscription();

    const page = await held;

    expect(page.items.map((i) => i.id)).toEqual([id]);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  test('a request woken with nothing to read is held again, and a change whose notification is lost then still answers it', async () => {
    const { api, userId } = await newUser();
    const { cursor } = await feed(api);
    const held = feed(api, { cursor, wait: 30 });
    await new Promise((r) => setTimeout(r, 300));
    // The reconnect wakes every held request; this one finds nothing and waits again.
    await killSubscription();
    await new Promise((r) => setTimeout(r, 1000));
    const id = await commitUnannounced(userId);
    const started = Date.now();

    const page = await held;

    expect(page.items.map((i) => i.id)).toEqual([id]);
    expect(Date.now() - started).toBeLessThan(FEED_RECHECK_MS + 3000);
  });

  test('a change whose notification is lost, with the subscription intact, answers a held request by the next recheck', async () => {
    const { held, id } = await unannouncedWhileHeld();
    const started = Date.now();

    const page = await held;

    expect(page.items.map((i) => i.id)).toEqual([id]);
    expect(Date.now() - started).toBeLessThan(FEED_RECHECK_MS + 3000);
  });

  test('a client that hangs up lets go of its held request', async () => {
    const { api, token } = await newUser();
    const { cursor } = await feed(api);
    const before = gateway.changes.held;
    const abort = new AbortController();
    const pending = fetch(`${gateway.baseUrl}/v1/sync/changes?cursor=${cursor}&wait=30`, {
      headers: { authorization: `Bearer ${token}` },
      signal: abort.signal,
    }).catch(() => 'aborted');
    await new Promise((r) => setTimeout(r, 200));
    expect(gateway.changes.held).toBe(before + 1);

    abort.abort();
    await pending;
    await new Promise((r) => setTimeout(r, 200));

    expect(gateway.changes.held).toBe(before);
  });
});
