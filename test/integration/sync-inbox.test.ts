import IORedis from 'ioredis';
import { STATEMENTS } from '../../shared/db/statement.tags';
import { newId } from '../../shared/ids';
import { Api, type ApiResponse } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { RedisServer } from '../support/redis.server';
import { untilStatementRunning } from '../support/statements';
import { spawnWorker, stopWorker, type WorkerProcess } from '../support/workers';

/**
 * The durable inbox with real worker processes: deadlines, shutdown in the middle of a batch, and
 * Redis losing its data (a redis-server of the test's own, never the shared one).
 */
let redis: RedisServer;
let env: TestEnv;
let gateway: RunningGateway;
let admin: Api;
const started: WorkerProcess[] = [];

const start = async (extra: Record<string, string> = {}) => {
  const w = await spawnWorker(env, extra);
  started.push(w);
  return w;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  redis = await RedisServer.start();
  env = await createTestEnv({ REDIS_URL: redis.url, SYNC_TIMEOUT_MS: '60000', SYNC_LOCK_MS: '2000' });
  gateway = await startGateway(env);
  admin = (await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password)).api;
});

afterAll(async () => {
  await Promise.all(started.map((w) => stopWorker(w, 'SIGKILL')));
  await gateway.close();
  await env.dropAll();
  await redis.stop();
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => stopWorker(w, 'SIGKILL')));
});

/** Holds the owner's tree lock (what every tree writer takes first) until `release` is called. */
async function holdOwnerLock(userId: string) {
  const trx = await env.db.transaction();
  await trx('users').where({ id: userId }).forUpdate().first('id');
  return { release: () => trx.rollback() };
}

/**
 * Waits until a connection of this test's database is inside an owner-lock statement (waiting for
 * it): the plain one, or the sync worker's, which locks the device's pending batches with it.
 */
const untilLockWait = () => untilStatementRunning(env.db, env.name, [STATEMENTS.lockOwner, STATEMENTS.lockOwnerAndPending]);

const folderOp = (opId: number, resourceId: string, name: string) => ({ opId, type: 'create', resourceId, payload: { resourceType: 'folder', name } });

test('a batch blocked past its deadline is rolled back, answered 503 and never applied; a retry then works', async () => {
  const worker = await start({ SYNC_BATCH_DEADLINE_MS: '2000', SYNC_LOCK_WAIT_S: '60' });
  const { api, userId, deviceId } = await admin.createUser('deadline-user');
  const id = newId();
  const lock = await holdOwnerLock(userId);

  // The gateway would wait 60 s; the answer comes from the worker giving the batch up at its deadline.
  let res: ApiResponse;
  let batches: { status: string }[];
  try {
    res = await api.post('/v1/sync/ops', { ops: [folderOp(1, id, 'late')] });
    batches = await env.db('sync_batches').where({ device_id: deviceId }).select('status');
  } finally {
    await lock.release();
  }

  expect(res.status).toBe(503);
  expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(batches.map((b) => b.status)).toEqual(['failed']);
  expect(await env.db('resources').where({ id }).first()).toBeUndefined();
  expect(worker.output()).toContain('sync batch over its deadline');

  const retry = await api.post('/v1/sync/ops', { ops: [folderOp(1, id, 'late')] });
  expect(retry.status).toBe(200);
  expect(retry.body.applied.map((a: { outcome: string }) => a.outcome)).toEqual(['applied']);
  expect(await env.db('resources').where({ id }).first()).toMatchObject({ name: 'late' });
});

test('SIGTERM ends a worker stuck in a batch at SHUTDOWN_TIMEOUT_MS; the batch stays pending and another worker applies it', async () => {
  const stuck = await start({ SHUTDOWN_TIMEOUT_MS: '1500', SYNC_BATCH_DEADLINE_MS: '120000', SYNC_LOCK_WAIT_S: '120' });
  const { api, userId, deviceId } = await admin.createUser('shutdown-user');
  const id = newId();
  const lock = await holdOwnerLock(userId);
  const pending = api.post('/v1/sync/ops', { ops: [folderOp(1, id, 'survivor')] });
  await untilLockWait().catch(async (err) => {
    await lock.release();
    throw err;
  });

  let code: unknown;
  let status: string[];
  try {
    stuck.child.kill('SIGTERM');
    code = await stuck.exited;
    // The worker is gone while the test still holds the lock its batch waits for: it did not wait for it.
    status = await env.db('sync_batches').where({ device_id: deviceId }).pluck('status');
  } finally {
    await lock.release();
  }

  expect(code).toBe(0);
  expect(stuck.output()).toContain('still running at the shutdown deadline');
  expect(status).toEqual(['pending']);
  await start();
  const res = await pending;
  expect(res.status).toBe(200);
  expect(res.body.applied.map((a: { outcome: string }) => a.outcome)).toEqual(['applied']);
  expect(await env.db('resources').where({ id }).first()).toMatchObject({ name: 'survivor' });
});

test('a ring lost with Redis is rung again by the sweeper and its client gets the real result', async () => {
  const { api, deviceId } = await admin.createUser('lost-ring-user');
  const id = newId();
  // No worker yet: the batch is recorded and rung, then Redis loses the ring.
  const pending = api.post('/v1/sync/ops', { ops: [folderOp(1, id, 'rung-again')] });
  while ((await env.db('sync_batches').where({ device_id: deviceId }).count({ n: '*' }))[0]!.n == 0) await sleep(20);
  await sleep(200);
  const flush = new IORedis(redis.url, { maxRetriesPerRequest: 1 });
  await flush.flushall();
  flush.disconnect();

  await start();
  const res = await pending;

  expect(res.status).toBe(200);
  expect(res.body.failed).toBeNull();
  expect(res.body.applied.map((a: { outcome: string }) => a.outcome)).toEqual(['applied']);
  expect(await env.db('sync_batches').where({ device_id: deviceId }).pluck('status')).toEqual(['done']);
});

test("a pending batch whose owner's row is gone is still taken by a ring, with its batches locked on their own", async () => {
  const { userId, deviceId } = await admin.createUser('vanished-owner');
  const missing = newId();
  // The service only marks users deleted; a row removed by hand leaves its pending batches behind.
  await env.db('sync_batches').insert({
    device_id: deviceId,
    user_id: userId,
    status: 'pending',
    ops: JSON.stringify([{ opId: 1, type: 'delete', resourceId: missing }]),
    request_id: 'vanished-owner',
    created_at: new Date(Date.now() - 60_000),
  });
  await env.db('users').where({ id: userId }).delete();

  await start();
  let row: { status: string; result: string | null } | undefined;
  for (const end = Date.now() + 20000; Date.now() < end; await sleep(50)) {
    row = await env.db('sync_batches').where({ request_id: 'vanished-owner' }).first('status', 'result');
    if (row?.status !== 'pending') break;
  }

  // Applied like any batch: deleting what does not exist changes nothing.
  expect(row?.status).toBe('done');
  const result = JSON.parse(row!.result!) as { applied: Array<{ outcome: string; resourceId: string }>; failed: unknown };
  expect(result.applied).toEqual([expect.objectContaining({ outcome: 'noop', resourceId: missing, type: 'delete' })]);
  expect(result.failed).toBeNull();
});

test('after Redis restarts without its data, batches of one device sent at once still apply one at a time in acceptance order', async () => {
  await Promise.all([start(), start()]);
  const { api, deviceId } = await admin.createUser('order-user');
  const fileId = newId();
  expect((await api.post('/v1/sync/ops', { ops: [{ opId: 1, type: 'create', resourceId: fileId, payload: { resourceType: 'file', name: 'v0' } }] })).status).toBe(200);
  const rename = (k: number) => [
    { opId: 100 + k, type: 'update', resourceId: fileId, payload: { name: `v${k}` } },
    folderOp(200 + k, newId(), `marker-${k}`),
  ];
  const burst = (from: number, n: number) => Promise.all(Array.from({ length: n }, (_, i) => api.post('/v1/sync/ops', { ops: rename(from + i) })));

  // A burst in flight while Redis is killed and comes back empty, then a burst on the empty Redis.
  const during = burst(1, 10);
  await sleep(30);
  await redis.restart(false);
  const duringRes = await during;
  while (!gateway.sync.redisReady) await sleep(50);
  const afterRes = await burst(11, 10);

  for (const res of [...duringRes, ...afterRes]) expect([200, 503]).toContain(res.status);
  for (const res of afterRes) expect(res.status).toBe(200);
  await sleep(3000);
  const rows = await env.db('sync_batches').where({ device_id: deviceId }).orderBy('id').select('id', 'status', 'ops', 'result', 'finished_at');
  const done = rows.filter((r) => r.status === 'done');
  expect(rows.filter((r) => r.status === 'pending')).toEqual([]);
  for (let i = 1; i < done.length; i++) expect(done[i]!.finished_at.getTime()).toBeGreaterThanOrEqual(done[i - 1]!.finished_at.getTime());
  // The traces of the renames were written in batch id order, and the last accepted rename stays.
  const kOf = (ops: string) => (JSON.parse(ops) as { opId: number }[])[0]!.opId - 100;
  const traces = await env.db('operation_traces').where({ device_id: deviceId }).andWhere('op_type', 'update').select('operation_id', 'created_at');
  const at = new Map(traces.map((t) => [Number(t.operation_id) - 100, t.created_at.getTime()]));
  const applied = done.map((r) => kOf(r.ops)).filter((k) => k > 0);
  for (let i = 1; i < applied.length; i++) expect(at.get(applied[i]!)!).toBeGreaterThanOrEqual(at.get(applied[i - 1]!)!);
  expect((await env.db('resources').where({ id: fileId }).first()).name).toBe(`v${applied[applied.length - 1]}`);
  // Every answer agrees with MySQL: a 200 is a done batch with that result; a withdrawn batch left no trace.
  const all = [...duringRes, ...afterRes];
  const byK = new Map(rows.map((r) => [kOf(r.ops), r]));
  all.forEach((res: ApiResponse, i) => {
    const row = byK.get(i + 1);
    if (res.status === 200) {
      expect(row?.status).toBe('done');
      expect(res.body.applied.map((a: { outcome: string }) => a.outcome)).toEqual(['applied', 'applied']);
    } else if (row?.status !== 'done') {
      // Refused before it was recorded (Redis down at submit), cancelled or failed: never applied.
      expect(at.has(i + 1)).toBe(false);
    }
  });
});

test('a worker frozen inside a transaction delays only its own user: others are served, and its batch is applied once by another worker', async () => {
  const version = String((await env.db.raw('SELECT VERSION() AS v'))[0][0].v);
  const frozen = await start({ SYNC_BATCH_DEADLINE_MS: '3000' });
  const { api, userId, deviceId } = await admin.createUser('frozen-user');
  const other = await admin.createUser('unaffected-user');
  const id = newId();

  // The frozen worker takes the batch and waits for the owner's lock; it freezes, then gets the lock.
  const lock = await holdOwnerLock(userId);
  const pending = api.post('/v1/sync/ops', { ops: [folderOp(1, id, 'once')] });
  try {
    await untilLockWait();
  } catch (err) {
    console.log(frozen.output());
    throw err;
  } finally {
    frozen.child.kill('SIGSTOP');
    await lock.release();
  }
  await start();

  const unaffected = await other.api.post('/v1/sync/ops', { ops: [folderOp(1, newId(), 'meanwhile')] });
  // MariaDB ends the frozen transaction (idle_transaction_timeout); MySQL 8 has no such limit, so there
  // the frozen worker must be resumed before its user's batch can go on.
  if (!/mariadb/i.test(version)) frozen.child.kill('SIGCONT');
  const res = await pending;
  frozen.child.kill('SIGCONT');
  await sleep(1500);

  expect(unaffected.status).toBe(200);
  expect(unaffected.body.applied.map((a: { outcome: string }) => a.outcome)).toEqual(['applied']);
  expect(res.status).toBe(200);
  expect(res.body.applied.map((a: { outcome: string }) => a.outcome)).toEqual(['applied']);
  expect(await env.db('resources').where({ id }).count({ n: '*' }).then((r) => Number(r[0]!.n))).toBe(1);
  expect(await env.db('operation_traces').where({ device_id: deviceId }).count({ n: '*' }).then((r) => Number(r[0]!.n))).toBe(1);
  expect(await env.db('sync_batches').where({ device_id: deviceId }).pluck('status')).toEqual(['done']);
});

test('with Redis gone while a client waits, the batch is withdrawn in MySQL and answered 503 within seconds; it never applies later', async () => {
  const { api, deviceId } = await admin.createUser('redis-gone-user');
  const id = newId();
  // No worker: the batch can only wait. The gateway's own timeout is 60 s.
  const pending = api.post('/v1/sync/ops', { ops: [folderOp(1, id, 'withdrawn')] });
  while ((await env.db('sync_batches').where({ device_id: deviceId }).count({ n: '*' }))[0]!.n == 0) await sleep(20);
  await redis.kill();

  const res = await pending;
  const status = await env.db('sync_batches').where({ device_id: deviceId }).pluck('status');
  await redis.restart(true);
  await start();
  await sleep(3000);

  expect(res.status).toBe(503);
  expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
  expect(status).toEqual(['cancelled']);
  expect(await env.db('resources').where({ id }).first()).toBeUndefined();
  expect(await env.db('sync_batches').where({ device_id: deviceId }).pluck('status')).toEqual(['cancelled']);
});
