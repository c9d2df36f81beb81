import type { Knex } from 'knex';
import { createDb, type Db } from '../../shared/db/knex';
import { newId } from '../../shared/ids';
import type { Api, ApiResponse } from '../support/client';
import { startStack, type TestStack } from '../support/stack';

/**
 * One user flooding the service while that user's write lock is held cannot take the connections or
 * the worker places of another user. The bound is USER_WRITE_CONCURRENCY (2 here, the default).
 */
let stack: TestStack;
let holderDb: Db;

const WRITE_WAIT_MS = 3000;

beforeAll(async () => {
  stack = await startStack({
    // Fewer rings than Alice has devices, and lock waits far longer than the test: without a bound
    // Alice's rings would hold every place until her lock is released.
    SYNC_CONCURRENCY: '4',
    SYNC_BATCH_DEADLINE_MS: '120000',
    SYNC_TIMEOUT_MS: '60000',
    USER_WRITE_CONCURRENCY: '2',
    USER_WRITE_WAIT_MS: String(WRITE_WAIT_MS),
  });
  holderDb = createDb(stack.env.config.databaseUrl, { max: 1 });
});

afterAll(async () => {
  await holderDb.destroy();
  await stack.close();
});

/** Holds the user's row lock, as a long write of theirs would, until `release`. */
async function holdOwnerLock(userId: string): Promise<{ release: () => Promise<void> }> {
  const trx: Knex.Transaction = await holderDb.transaction();
  await trx('users').where({ id: userId }).forUpdate().first('id');
  return { release: () => trx.rollback().then(() => undefined) };
}

/** Transactions of this test's database waiting for a row lock right now. */
async function lockWaits(): Promise<number> {
  const [rows] = (await stack.env.db.raw(
    'SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id ' +
      "WHERE t.trx_state = 'LOCK WAIT' AND p.DB = ?",
    [stack.env.name],
  )) as [Array<{ n: number | string }>];
  return Number(rows[0]?.n ?? 0);
}

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    // Not faster: back-to-back reads of INNODB_TRX kept the waiting writes from showing as waits.
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A promise whose outcome can be looked at before it settles. */
function tracked<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let done = false;
  const p = promise.finally(() => (done = true));
  return { promise: p, settled: () => done };
}

async function uploadFiles(api: Api, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await api.upload({}, { name: `f-${i}.txt`, content: `content ${i}` });
    expect(res.status).toBe(201);
    ids.push(res.body.id);
  }
  return ids;
}

test("while Alice's lock is held and she floods the gateway with writes, Bob's requests are answered, and Alice's extra writes get 503 with Retry-After", async () => {
  const alice = await stack.admin.createUser('alice-flood');
  const bob = await stack.admin.createUser('bob-calm');
  const aliceFiles = await uploadFiles(alice.api, 30);
  const [bobFile] = await uploadFiles(bob.api, 1);
  const lock = await holdOwnerLock(alice.userId);
  let released = false;
  try {
    const deletes = aliceFiles.map((id) => tracked(alice.api.delete(`/v1/files/${id}`)));
    const uploads = Array.from({ length: 5 }, (_, i) => tracked(alice.api.upload({}, { name: `late-${i}.txt`, content: 'x' })));
    const flood = [...deletes, ...uploads];

    // Alice's writes that reached the database wait for her lock: exactly the bound, not the pool.
    await until('two of her writes wait for her lock', async () => (await lockWaits()) >= 2);

    // Deletes, restores and purges of ids she does not have change nothing: answered without her lock.
    const nothing = await Promise.all([
      ...Array.from({ length: 10 }, () => alice.api.delete(`/v1/files/${newId()}`)),
      ...Array.from({ length: 5 }, () => alice.api.post(`/v1/trash/${newId()}/restore`)),
      ...Array.from({ length: 5 }, () => alice.api.delete(`/v1/trash/${newId()}`)),
      alice.api.delete(`/v1/files/${bobFile}`),
    ]);
    expect(nothing.map((r) => r.status)).toEqual(nothing.map(() => 404));

    // Bob lists, deletes and uploads while Alice's lock is still held.
    const list = await bob.api.get('/v1/files');
    expect(list.status).toBe(200);
    expect(list.body.items.map((f: { id: string }) => f.id)).toEqual([bobFile]);
    expect((await bob.api.delete(`/v1/files/${bobFile}`)).status).toBe(200);
    expect((await bob.api.upload({}, { name: 'bob.txt', content: 'bob' })).status).toBe(201);
    expect((await bob.api.get('/v1/trash')).status).toBe(200);

    // Those beyond the bound give up after USER_WRITE_WAIT_MS; the two at the lock are still waiting.
    await until('all but two of her writes are answered', () => flood.filter((f) => !f.settled()).length === 2, WRITE_WAIT_MS + 15_000);
    expect(await lockWaits()).toBe(2);
    await lock.release();
    released = true;

    const deleteAnswers: ApiResponse[] = await Promise.all(deletes.map((f) => f.promise));
    const uploadAnswers: ApiResponse[] = await Promise.all(uploads.map((f) => f.promise));
    for (const r of deleteAnswers) expect([200, 503]).toContain(r.status);
    for (const r of uploadAnswers) expect([201, 503]).toContain(r.status);
    const unavailable = [...deleteAnswers, ...uploadAnswers].filter((r) => r.status === 503);
    expect(unavailable).toHaveLength(flood.length - 2);
    for (const r of unavailable) {
      expect(r.headers.get('retry-after')).toBe('2');
      expect(r.body.error.code).toBe('SERVICE_UNAVAILABLE');
    }
    // Nothing was half done: a file is deleted exactly when its delete answered 200.
    const deletedIds = aliceFiles.filter((_, i) => deleteAnswers[i]!.status === 200).sort();
    const rows = await stack.env.db('resources').where({ user_id: alice.userId, type: 'file' }).whereNotNull('deleted_at').orderBy('id').pluck('id');
    expect(rows).toEqual(deletedIds);
    const active = await stack.env.db('resources').where({ user_id: alice.userId, type: 'file' }).whereNull('deleted_at').count<{ n: number }[]>({ n: '*' });
    expect(Number(active[0]!.n)).toBe(30 - deletedIds.length + uploadAnswers.filter((r) => r.status === 201).length);
  } finally {
    if (!released) await lock.release();
  }
  // Alice's 30 uploads, her writes' wait and the release take a while on a loaded machine.
}, 120_000);

test("while Alice's lock is held and her devices' batches queue, Bob's sync batches are applied", async () => {
  const alice = await stack.admin.createUser('alice-sync');
  const devices = [alice.api];
  for (let i = 0; i < 5; i++) devices.push((await alice.api.login('alice-sync', 'user-password-1')).api);
  const bob = await stack.admin.createUser('bob-sync');
  const lock = await holdOwnerLock(alice.userId);
  let released = false;
  try {
    // Six devices, six rings of Alice, for a worker with four places.
    const aliceBatches = devices.map((api, i) =>
      tracked(api.post('/v1/sync/ops', { ops: [{ opId: 1, type: 'create', resourceId: newId(), payload: { resourceType: 'folder', name: `a${i}` } }] })),
    );
    await until('two of her rings wait for her lock', async () => (await lockWaits()) >= 2);

    for (let i = 0; i < 3; i++) {
      const res = await bob.api.post('/v1/sync/ops', { ops: [{ opId: i + 1, type: 'create', resourceId: newId(), payload: { resourceType: 'folder', name: `b${i}` } }] });
      expect(res.status).toBe(200);
      expect(res.body.failed).toBeNull();
      expect(res.body.applied[0].outcome).toBe('applied');
    }
    // Still held: Alice's batches are all waiting, and no more than two of her rings hold a connection.
    expect(aliceBatches.every((b) => !b.settled())).toBe(true);
    expect(await lockWaits()).toBe(2);
    await lock.release();
    released = true;

    for (const res of await Promise.all(aliceBatches.map((b) => b.promise))) {
      expect(res.status).toBe(200);
      expect(res.body.applied[0].outcome).toBe('applied');
    }
  } finally {
    if (!released) await lock.release();
  }
  const folders = await stack.env.db('resources').where({ user_id: alice.userId, type: 'folder' }).whereNull('deleted_at').count<{ n: number }[]>({ n: '*' });
  expect(Number(folders[0]!.n)).toBe(6);
}, 120_000);
