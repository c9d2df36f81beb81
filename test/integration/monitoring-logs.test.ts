import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, JWT_SECRET, type TestEnv } from '../support/harness';
import { logLines, spawnGateway, stopProcess, type GatewayProcess } from '../support/processes';
import { spawnWorker, stopWorker, type WorkerProcess } from '../support/workers';

/** Real gateway and worker processes at LOG_LEVEL=info: JSON lines, request ids across both, no secrets. */
let env: TestEnv;
let gateway: GatewayProcess;
let worker: WorkerProcess;

beforeAll(async () => {
  env = await createTestEnv();
  [gateway, worker] = await Promise.all([spawnGateway(env), spawnWorker(env)]);
});

afterAll(async () => {
  await Promise.all([gateway && stopProcess(gateway, 'SIGKILL'), worker && stopWorker(worker, 'SIGKILL')]);
  await env.dropAll();
});

test('a login, a password change, a sync batch and a dashboard visit leave no password, token or secret in either log', async () => {
  const secrets: string[] = [ADMIN.password, JWT_SECRET];
  const anon = new Api(gateway.baseUrl);
  const admin = await anon.login(ADMIN.username, ADMIN.password);
  secrets.push(admin.token);

  const first = 'first-Secret-pass-1';
  const second = 'second-Secret-pass-2';
  const wrong = 'wrong-Secret-pass-3';
  secrets.push(first, second, wrong);
  expect((await admin.api.post('/v1/users', { username: 'log-user', password: first })).status).toBe(201);
  const user = await anon.login('log-user', first);
  secrets.push(user.token);
  expect((await user.api.patch('/v1/users/me/password', { current_password: first, new_password: second })).status).toBe(204);
  expect((await user.api.patch('/v1/users/me/password', { current_password: wrong, new_password: second })).status).toBe(403);
  expect((await anon.post('/v1/auth/login', { username: 'log-user', password: wrong, deviceId: user.deviceId })).status).toBe(401);
  const again = await anon.login('log-user', second, user.deviceId);
  secrets.push(again.token);

  const requestId = `ops-logs-${newId()}`;
  const batch = await again.api.request('POST', '/v1/sync/ops', {
    json: { ops: [{ opId: 1, type: 'create', resourceId: newId(), payload: { resourceType: 'folder', name: 'logged' } }] },
    headers: { 'x-request-id': requestId },
  });
  expect(batch.status).toBe(200);
  expect(batch.headers.get('x-request-id')).toBe(requestId);

  const basic = Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64');
  secrets.push(basic);
  expect((await anon.get('/admin/queues/api/queues', { authorization: `Basic ${basic}` })).status).toBe(200);

  // Stopping flushes both loggers and proves the lines below were all written.
  await Promise.all([stopProcess(gateway), stopWorker(worker)]);
  const gatewayLog = gateway.output();
  const workerLog = worker.output();

  for (const secret of secrets) {
    expect(gatewayLog).not.toContain(secret);
    expect(workerLog).not.toContain(secret);
  }

  const gatewayLines = logLines(gatewayLog);
  const workerLines = logLines(workerLog);
  expect(gatewayLines.every((l) => l.service === 'gateway' && typeof l.time === 'string')).toBe(true);
  expect(workerLines.every((l) => l.service === 'worker')).toBe(true);
  // The gateway's id for the request travels in the job and reappears on the worker's line for that batch.
  expect(gatewayLines.some((l) => (l.req as { id?: string } | undefined)?.id === requestId)).toBe(true);
  expect(workerLines.find((l) => l.requestId === requestId)).toEqual(expect.objectContaining({ msg: 'sync batch applied', applied: 1 }));
});

test('a sign-in shed with 503 under load is logged at warn without a stack trace, never at error', async () => {
  const shedding = await spawnGateway(env, { LOGIN_CONCURRENCY: '1', LOGIN_QUEUE_TIMEOUT_MS: '0' });
  try {
    const anon = new Api(shedding.baseUrl);
    const deviceId = await anon.registerDevice('shed');
    const burst = await Promise.all(
      Array.from({ length: 20 }, () => anon.post('/v1/auth/login', { username: ADMIN.username, password: ADMIN.password, deviceId })),
    );
    expect(burst.filter((r) => r.status === 503).length).toBeGreaterThan(0);
  } finally {
    await stopProcess(shedding);
  }
  const lines = logLines(shedding.output());
  expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
  const shed = lines.filter((l) => l.msg === 'request shed');
  expect(shed.length).toBeGreaterThan(0);
  expect(shed.every((l) => l.level === 40)).toBe(true);
  expect(shedding.output()).not.toMatch(/"stack"/);
});
