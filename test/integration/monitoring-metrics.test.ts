import type { AddressInfo } from 'node:net';
import { newId } from '../../shared/ids';
import { SYNC_QUEUE_NAME } from '../../shared/queue/ring.contract';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { hasSeries, metricValue } from '../support/metrics';
import { startInProcessWorkers, type OpenWorker } from '../support/workers';

/** /metrics of both services moves with the traffic it describes. */
let env: TestEnv;
let gateway: RunningGateway;
let worker: OpenWorker;
let workerBase: string;
let anon: Api;

beforeAll(async () => {
  env = await createTestEnv();
  gateway = await startGateway(env);
  // Wired as services/worker/main.ts does it (openWorker), its monitoring endpoints on a port of the OS's choosing.
  worker = await startInProcessWorkers(env, { monitoringPort: 0 });
  workerBase = `http://127.0.0.1:${(worker.monitoring!.address() as AddressInfo).port}`;
  anon = new Api(gateway.baseUrl);
});

afterAll(async () => {
  await worker?.close();
  await gateway?.close();
  await env?.dropAll();
});

async function scrape(base: string): Promise<string> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

test('a login and a sync batch move the gateway’s and the worker’s counters and histograms', async () => {
  const gatewayBefore = await scrape(gateway.baseUrl);
  const workerBefore = await scrape(workerBase);

  const { api } = await anon.login(ADMIN.username, ADMIN.password);
  const wrong = await anon.post('/v1/auth/login', { username: ADMIN.username, password: 'not-the-password', deviceId: await anon.registerDevice() });
  expect(wrong.status).toBe(401);
  expect((await anon.request('POST', '/v1/auth/login', { json: '{"username": ' })).status).toBe(400);
  const folder = newId();
  const batch = await api.post('/v1/sync/ops', {
    ops: [
      { opId: 1, type: 'create', resourceId: folder, payload: { resourceType: 'folder', name: 'docs' } },
      { opId: 2, type: 'create', resourceId: newId(), payload: { resourceType: 'file', name: 'a.txt', parentId: folder } },
      { opId: 3, type: 'create', resourceId: newId(), payload: { resourceType: 'file', name: 'b.txt', parentId: newId() } },
    ],
  });
  expect(batch.status).toBe(200);
  expect(batch.body.failed.error.code).toBe('NOT_FOUND');
  expect((await api.get(`/v1/files/${newId()}`)).status).toBe(404);

  const delta = (after: string, before: string, name: string, labels: Record<string, string>) =>
    metricValue(after, name, labels) - metricValue(before, name, labels);
  const g = await scrape(gateway.baseUrl);
  // The worker counts a batch on its own 'completed' event, which may trail the result the gateway relayed.
  let w = await scrape(workerBase);
  for (let i = 0; i < 50 && delta(w, workerBefore, 'filesync_sync_batch_duration_seconds_count', {}) === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    w = await scrape(workerBase);
  }

  expect(delta(g, gatewayBefore, 'filesync_login_attempts_total', { outcome: 'success' })).toBe(1);
  expect(delta(g, gatewayBefore, 'filesync_login_attempts_total', { outcome: 'failure' })).toBe(1);
  expect(delta(g, gatewayBefore, 'filesync_login_attempts_total', { outcome: 'invalid' })).toBe(1);
  expect(delta(g, gatewayBefore, 'filesync_sync_submit_duration_seconds_count', { outcome: 'op_failed' })).toBe(1);
  expect(delta(g, gatewayBefore, 'filesync_sync_submit_duration_seconds_sum', {})).toBeGreaterThan(0);
  // Route patterns, never raw URLs; a failed request keeps its full pattern too.
  expect(delta(g, gatewayBefore, 'filesync_http_request_duration_seconds_count', { method: 'POST', route: '/v1/sync/ops', status: '200' })).toBe(1);
  expect(delta(g, gatewayBefore, 'filesync_http_request_duration_seconds_count', { method: 'GET', route: '/v1/files/:id', status: '404' })).toBe(1);
  expect(delta(g, gatewayBefore, 'filesync_http_request_duration_seconds_count', { method: 'POST', route: '/v1/auth/login', status: '401' })).toBe(1);
  expect(g).not.toContain(folder);

  expect(delta(w, workerBefore, 'filesync_sync_ops_applied_total', { type: 'create', outcome: 'applied' })).toBe(2);
  expect(delta(w, workerBefore, 'filesync_sync_ops_failed_total', { type: 'create', code: 'NOT_FOUND' })).toBe(1);
  expect(delta(w, workerBefore, 'filesync_sync_batch_duration_seconds_count', { outcome: 'op_failed' })).toBe(1);
  expect(hasSeries(w, 'process_cpu_user_seconds_total', { service: 'worker' })).toBe(true);
});

test('the gateway reports waiting and active jobs of the sync queue at scrape time', async () => {
  const text = await scrape(gateway.baseUrl);
  for (const queue of [SYNC_QUEUE_NAME]) {
    for (const state of ['waiting', 'active']) expect(hasSeries(text, 'filesync_sync_queue_jobs', { queue, state })).toBe(true);
  }
  expect(metricValue(text, 'filesync_sync_queue_jobs', { state: 'waiting' })).toBe(0);
});

test('requests to unknown paths share one route label instead of their URLs', async () => {
  const path = `/no/such/${newId()}`;
  expect((await anon.get(path)).status).toBe(404);
  const text = await scrape(gateway.baseUrl);
  expect(text).not.toContain(path);
  expect(metricValue(text, 'filesync_http_request_duration_seconds_count', { route: '<unmatched>', status: '404' })).toBeGreaterThanOrEqual(1);
});

test('the worker serves /healthz and /readyz next to /metrics', async () => {
  expect((await fetch(`${workerBase}/healthz`)).status).toBe(200);
  const ready = await fetch(`${workerBase}/readyz`);
  expect(ready.status).toBe(200);
  expect(await ready.json()).toEqual({ status: 'ready', mysql: true, redis: true });
});

test('sign-ins turned away by the rate limit or by a full Argon2 queue are counted as rate_limited and busy', async () => {
  // A gateway of its own: one sign-in per minute and name, one Argon2 run at a time, no waiting for a slot.
  const strictEnv = await createTestEnv({ LOGIN_RATE_LIMIT: '1', LOGIN_CONCURRENCY: '1', LOGIN_QUEUE_TIMEOUT_MS: '0' });
  const strict = await startGateway(strictEnv);
  try {
    const client = new Api(strict.baseUrl);
    const deviceId = await client.registerDevice();
    const login = (username: string) => client.post('/v1/auth/login', { username, password: 'whatever-password', deviceId });
    const before = await scrape(strict.baseUrl);

    expect((await login('someone')).status).toBe(401);
    expect((await login('someone')).status).toBe(429);
    const burst = await Promise.all(['b1', 'b2', 'b3', 'b4', 'b5', 'b6'].map(login));
    expect(burst.map((r) => r.status)).toContain(503);

    const after = await scrape(strict.baseUrl);
    const count = (text: string, outcome: string) => metricValue(text, 'filesync_login_attempts_total', { outcome });
    expect(count(after, 'rate_limited') - count(before, 'rate_limited')).toBe(1);
    expect(count(after, 'busy') - count(before, 'busy')).toBe(burst.filter((r) => r.status === 503).length);
    expect(count(after, 'failure') - count(before, 'failure')).toBe(1 + burst.filter((r) => r.status === 401).length);
  } finally {
    await strict.close();
    await strictEnv.dropAll();
  }
});
