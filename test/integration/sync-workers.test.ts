import { Queue } from 'bullmq';
import { newId } from '../../shared/ids';
import { SYNC_QUEUE_NAME } from '../../shared/queue/ring.contract';
import { redisOptions } from '../../shared/redis/redis.connection';
import { createLogger } from '../../shared/logger';
import { BatchSubmitter } from '../../services/gateway/sync/batch.submitter';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { spawnWorker, stopWorker, type WorkerProcess } from '../support/workers';

/** Batches through real worker processes: ordering, mutual exclusion, crashes and outages. */
let env: TestEnv;
let gateway: RunningGateway;
let admin: Api;
const started: WorkerProcess[] = [];

const start = async () => {
  const w = await spawnWorker(env);
  started.push(w);
  return w;
};

beforeAll(async () => {
  // A short lock lets a killed worker's batch be recovered in seconds rather than the default 30 s.
  env = await createTestEnv({ SYNC_LOCK_MS: '2000', SYNC_TIMEOUT_MS: '20000' });
  gateway = await startGateway(env);
  admin = (await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password)).api;
});

afterAll(async () => {
  await Promise.all(started.map((w) => stopWorker(w, 'SIGKILL')));
  await gateway.close();
  await env.dropAll();
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => stopWorker(w)));
});

test('with two worker processes, 20 simultaneous batches of one device never overlap', async () => {
  await Promise.all([start(), start()]);
  const { api } = await admin.createUser('busy-device');
  let opId = 1;
  const batches = Array.from({ length: 20 }, () => {
    const id = newId();
    return [
      { opId: opId++, type: 'create', resourceId: id, payload: { resourceType: 'folder', name: 'T' } },
      { opId: opId++, type: 'delete', resourceId: id },
    ];
  });

  const results = await Promise.all(batches.map((ops) => api.post('/v1/sync/ops', { ops })));

  for (const res of results) {
    expect(res.status).toBe(200);
    expect(res.body.failed).toBeNull();
    expect(res.body.applied.map((a: { outcome: string }) => a.outcome)).toEqual(['applied', 'applied']);
  }
  const rows = await env.db('resources').where({ name: 'T' }).select('deleted_at');
  expect(rows).toHaveLength(20);
  expect(rows.every((r) => r.deleted_at !== null)).toBe(true);
});

test('batches of one device are applied one at a time in the order they were accepted', async () => {
  await Promise.all([start(), start()]);
  const { userId, deviceId } = await admin.createUser('ordered-device');
  const id = newId();
  const client = new BatchSubmitter(
    { redis: env.config.redisUrl, prefix: env.config.queuePrefix, timeoutMs: 20000, db: env.db },
    createLogger('test', 'silent'),
  );
  await client.ready();
  const batch = (i: number, op: object) => ({ requestId: `order-${i}`, userId, deviceId, acceptedAt: Date.now(), opsJson: JSON.stringify([op]) });
  await client.submit(batch(0, { opId: 1, type: 'create', resourceId: id, payload: { resourceType: 'file', name: 'v0' } }));

  // Sent at once; the inbox ids give the order they were accepted in, and two workers apply them.
  const results = await Promise.all(
    Array.from({ length: 15 }, (_, k) => client.submit(batch(k + 1, { opId: 100 + k + 1, type: 'update', resourceId: id, payload: { name: `v${k + 1}` } }))),
  );
  await client.close();

  expect(results.every((r) => r.failed === null && r.applied[0]!.outcome === 'applied')).toBe(true);
  const rows = await env.db('sync_batches').where({ device_id: deviceId }).orderBy('id').select('request_id', 'status', 'finished_at');
  expect(rows).toHaveLength(16);
  expect(rows.every((r) => r.status === 'done')).toBe(true);
  for (let i = 1; i < rows.length; i++) {
    // Each batch finished no earlier than the one accepted before it.
    expect(rows[i]!.finished_at.getTime()).toBeGreaterThanOrEqual(rows[i - 1]!.finished_at.getTime());
  }
  // The last accepted rename is the one that stays.
  const last = rows[rows.length - 1]!.request_id as string;
  expect((await env.db('resources').where({ id }).first()).name).toBe(`v${last.slice(6)}`);
});

test('a worker killed mid-batch loses nothing: after recovery and a client retry every op is applied exactly once', async () => {
  const victim = await start();
  const { api, deviceId } = await admin.createUser('crash-device');
  const folderId = newId();
  const ops = [
    { opId: 1, type: 'create', resourceId: folderId, payload: { resourceType: 'folder', name: 'big' } },
    ...Array.from({ length: 999 }, (_, i) => ({
      opId: i + 2,
      type: 'create',
      resourceId: newId(),
      payload: { resourceType: 'file', name: `f${i}.txt`, parentId: folderId },
    })),
  ];
  const queue = new Queue(SYNC_QUEUE_NAME, {
    connection: redisOptions(env.config.redisUrl, 'producer'),
    prefix: env.config.queuePrefix,
  });

  const first = api.post('/v1/sync/ops', { ops });
  while ((await queue.getActiveCount()) === 0) await new Promise((r) => setTimeout(r, 5));
  victim.child.kill('SIGKILL');
  await victim.exited;
  await start();
  const firstResult = await first;
  const retry = await api.post('/v1/sync/ops', { ops });
  await queue.close();

  // The first request is answered by the recovered batch, or times out with 503; either is honest.
  expect([200, 503]).toContain(firstResult.status);
  expect(retry.status).toBe(200);
  expect(retry.body.failed).toBeNull();
  expect(retry.body.applied).toHaveLength(1000);
  expect(new Set(retry.body.applied.map((a: { outcome: string }) => a.outcome))).toEqual(new Set(['duplicate']));
  const created = await env.db('resources').where({ parent_id: folderId }).count({ n: '*' });
  expect(Number(created[0]!.n)).toBe(999);
  const traces = await env.db('operation_traces').where({ device_id: deviceId }).count({ n: '*' });
  expect(Number(traces[0]!.n)).toBe(1000);
});

test('with no worker running the batch gets 503 after the timeout, and a retry once a worker runs applies it once', async () => {
  const quick = new BatchSubmitter({ redis: env.config.redisUrl, prefix: env.config.queuePrefix, timeoutMs: 1000, db: env.db }, createLogger('test', 'silent'));
  await quick.ready();
  const { userId, deviceId } = await admin.createUser('patient-device');
  const id = newId();
  const data = { requestId: 'r1', userId, deviceId, acceptedAt: Date.now(), opsJson: JSON.stringify([{ opId: 7, type: 'create', resourceId: id, payload: { resourceType: 'folder', name: 'later' } }]) };

  await expect(quick.submit(data)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryAfter: expect.any(Number) });
  // The expired batch was withdrawn (cancelled in MySQL), so nothing is applied behind the client's back.
  expect(await env.db('sync_batches').where({ device_id: deviceId }).pluck('status')).toEqual(['cancelled']);
  await start();
  // Longer than the sweeper's delay: a cancelled batch is never rung again, and its old ring finds nothing to do.
  await new Promise((r) => setTimeout(r, 3000));
  expect(await env.db('resources').where({ id }).first()).toBeUndefined();
  const retried = await quick.submit(data);
  await quick.close();

  expect(retried.failed).toBeNull();
  expect(retried.applied.map((a) => a.outcome)).toEqual(['applied']);
  expect(await env.db('resources').where({ id }).first()).toMatchObject({ name: 'later', deleted_at: null });
});

test('the HTTP endpoint answers 503 with Retry-After when no result arrives in time', async () => {
  const slowEnv = { ...env, config: { ...env.config, syncTimeoutMs: 500 } };
  const short = await startGateway(slowEnv);
  try {
    const { api } = await new Api(short.baseUrl).login(ADMIN.username, ADMIN.password);
    const res = await api.post('/v1/sync/ops', { ops: [{ opId: 1, type: 'share' }] });
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  } finally {
    await short.close();
  }
});

test('with Redis unreachable the batch gets 503 at once', async () => {
  const deadEnv = { ...env, config: { ...env.config, redisUrl: 'redis://127.0.0.1:1' } };
  const dead = new BatchSubmitter({ redis: deadEnv.config.redisUrl, prefix: env.config.queuePrefix, timeoutMs: 10000, db: env.db }, createLogger('test', 'silent'));
  const before = Date.now();
  await expect(dead.submit({ requestId: 'r', userId: newId(), deviceId: newId(), acceptedAt: 0, opsJson: '[]' })).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
  const waited = Date.now() - before;
  await dead.close();
  // Not a timing assertion on speed, only that it did not wait for the 10 s sync timeout.
  expect(waited).toBeLessThan(10000);
});
