import { Cluster } from 'ioredis';
import { newId } from '../../shared/ids';
import { connectRedis } from '../../shared/redis/redis.connection';
import { Api } from '../support/client';
import { expectError, waitFor } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { RedisCluster } from '../support/redis.cluster';
import { TusRaw } from '../support/tus';
import { startInProcessWorkers, type OpenWorker } from '../support/workers';
import { startMaintenance, type MaintenanceWorkers } from '../../services/worker/maintenance.workers';
import { createLogger } from '../../shared/logger';
import { deleteFile, resourceRow, uploadFile } from '../support/lifecycle';

/**
 * The service with REDIS_CLUSTER_NODES on a real three-master Redis Cluster: two gateways and a
 * worker share it for every use of Redis (queues, rate limits, upload locks, change notifications,
 * the principal cache), and none of it touches the one-node Redis.
 */
let cluster: RedisCluster;
let env: TestEnv;
let one: RunningGateway;
let two: RunningGateway;
let workers: OpenWorker;
let maintenance: MaintenanceWorkers;
let admin: Api;
let nextOpId = 1;

beforeAll(async () => {
  cluster = await RedisCluster.start(3, 0);
  env = await createTestEnv({
    REDIS_CLUSTER_NODES: cluster.nodes,
    // Nothing listens there: a use of REDIS_URL would fail.
    REDIS_URL: 'redis://127.0.0.1:1',
    AUTH_CACHE_MS: '60000',
    LOGIN_RATE_LIMIT: '4',
    // About 2.6 s, so the scheduled purge has something to do during the file.
    TRASH_RETENTION_DAYS: '0.00003',
  });
  [one, two] = await Promise.all([startGateway(env), startGateway(env)]);
  workers = await startInProcessWorkers(env);
  maintenance = await startMaintenance(env.config, env.db, createLogger('worker', 'silent'));
  admin = (await new Api(one.baseUrl).login(ADMIN.username, ADMIN.password)).api;
});

afterAll(async () => {
  await Promise.all([workers?.close(), maintenance?.close()]);
  await Promise.all([one?.close(), two?.close()]);
  await env?.dropAll();
  await cluster?.stop();
});

const folderOp = (name: string, parentId: string | null = null) => ({
  opId: nextOpId++,
  type: 'create',
  resourceId: newId(),
  payload: { resourceType: 'folder', name, parentId },
});

test('the queues live under a hash-tagged prefix, so each queue sits in one slot of the cluster', async () => {
  const user = await admin.createUser('slotted');
  expect((await user.api.post('/v1/sync/ops', { ops: [folderOp('a')] })).status).toBe(200);

  const probe = connectRedis(env.config, 'producer') as Cluster;
  try {
    await new Promise((resolve) => probe.once('ready', resolve));
    const keys: string[] = [];
    for (const node of probe.nodes('master')) keys.push(...(await node.keys(`{${env.config.queuePrefix}}:sync:*`)));
    expect(keys.length).toBeGreaterThan(0);
    const slots = new Set(await Promise.all(keys.map((k) => probe.call('CLUSTER', 'KEYSLOT', k))));
    expect(slots.size).toBe(1);
  } finally {
    probe.disconnect();
  }
});

test('each device\'s batches, sent through both gateways at once, apply in the order they were accepted', async () => {
  const user = await admin.createUser('ordered');
  const devices = await Promise.all([0, 1, 2].map(async () => (await new Api(one.baseUrl).login('ordered', 'user-password-1')).token));
  const sends = devices.flatMap((token, d) =>
    Array.from({ length: 10 }, (_, i) => {
      const api = new Api((i % 2 === 0 ? one : two).baseUrl, token);
      return api.post('/v1/sync/ops', { ops: [folderOp(`d${d}-${String(i).padStart(2, '0')}`)] });
    }),
  );
  const answers = await Promise.all(sends);
  expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));

  // Per device, the folder of each later batch (by acceptance: id) was written later (change_seq).
  const batches = await env.db('sync_batches').where({ user_id: user.userId }).orderBy('id').select('device_id', 'status', 'ops');
  expect(batches.map((b) => b.status)).toEqual(batches.map(() => 'done'));
  const seqs = new Map<string, number>(
    (await env.db('resources').where({ user_id: user.userId }).select('id', 'change_seq')).map((r) => [r.id, Number(r.change_seq)]),
  );
  const perDevice = new Map<string, number[]>();
  for (const b of batches) {
    const [op] = JSON.parse(b.ops) as Array<{ resourceId: string }>;
    perDevice.set(b.device_id, [...(perDevice.get(b.device_id) ?? []), seqs.get(op!.resourceId)!]);
  }
  expect(perDevice.size).toBe(3);
  for (const seq of perDevice.values()) {
    expect(seq).toHaveLength(10);
    expect(seq).toEqual([...seq].sort((a, b) => a - b));
  }
});

test('a rate limit counts every gateway against one budget', async () => {
  const deviceId = await admin.registerDevice();
  const attempt = (gateway: RunningGateway) =>
    new Api(gateway.baseUrl).post('/v1/auth/login', { username: 'guessed', password: 'not-the-password', deviceId });
  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push((await attempt(i % 2 === 0 ? one : two)).status);
  expect(statuses).toEqual([401, 401, 401, 401, 429, 429]);
});

test('a resumable upload started on one gateway continues on the other', async () => {
  const user = await admin.createUser('resumer');
  const body = Buffer.from('0123456789abcdefghij');
  const location = await new TusRaw(user.api).start(body.length, { name: 'resumed.txt' });
  const first = await new TusRaw(user.api).patch(location, 0, body.subarray(0, 8));
  expect(first.status).toBe(204);

  const onTwo = new TusRaw(new Api(two.baseUrl, user.token));
  expect((await onTwo.head(location)).headers.get('upload-offset')).toBe('8');
  const last = await onTwo.patch(location, 8, body.subarray(8));
  expect(last.status).toBe(200);
  const content = await user.api.get(`/v1/files/${last.body.id}/content`);
  expect(content.text).toBe(body.toString());
});

test('a change made through one gateway wakes a change-feed request held by the other', async () => {
  const user = await admin.createUser('watcher');
  const onTwo = new Api(two.baseUrl, user.token);
  const start = await onTwo.get('/v1/sync/changes');
  const held = onTwo.get(`/v1/sync/changes?cursor=${encodeURIComponent(start.body.cursor)}&wait=20`);
  // The request is held once the gateway counts it.
  expect(await waitFor(async () => two.changes.held > 0, 5000, 10)).toBe(true);
  const started = Date.now();
  expect((await user.api.post('/v1/sync/ops', { ops: [folderOp('wake-up')] })).status).toBe(200);

  const page = await held;
  expect(page.status).toBe(200);
  expect(page.body.items.map((i: { name: string }) => i.name)).toEqual(['wake-up']);
  // Woken by the change, not answered because its wait ran out.
  expect(Date.now() - started).toBeLessThan(20_000);
});

test('an account deleted on one gateway is refused at once by the other, whose cache held it', async () => {
  const victim = await admin.createUser('revoked');
  const onTwo = new Api(two.baseUrl, victim.token);
  expect((await onTwo.get('/v1/files')).status).toBe(200);

  expect((await admin.delete(`/v1/users/${victim.userId}`)).status).toBe(204);

  expect(await waitFor(async () => (await onTwo.get('/v1/files')).status === 401, 3000, 10)).toBe(true);
  expectError(await onTwo.get('/v1/files'), 401, 'UNAUTHORIZED');
});

test('the readiness check answers through the cluster', async () => {
  const res = await new Api(two.baseUrl).get('/readyz');
  expect(res.status).toBe(200);
  expect(res.body.redis).toBe(true);
});

test('the scheduled maintenance runs from the cluster: a deleted file is purged once its retention has passed', async () => {
  const user = await admin.createUser('purged');
  const file = await uploadFile(user.api, 'short-lived.txt', 'bytes');
  await deleteFile(user.api, file.id);

  // Eventually: the scheduled purge.
  expect(await waitFor(async () => (await resourceRow(env, file.id)).purged_at !== null, 30_000, 200)).toBe(true);
  expect((await user.api.post(`/v1/trash/${file.id}/restore`)).status).toBe(404);
});
