import http from 'node:http';
import type { Knex } from 'knex';
import { newId } from '../../shared/ids';
import { PART_SIZE } from '../../shared/storage/s3/s3.store';
import { Api, type ApiResponse } from '../support/client';
import { DRIVERS, onDriver, StoredContent, type Driver } from '../support/drivers';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { spawnGateway, stopProcess, waitForOutput, type GatewayProcess } from '../support/processes';
import { spawnWorker, stopWorker, type WorkerProcess } from '../support/workers';

/** SIGTERM lets work in flight finish: an upload on the gateway, a sync batch on the worker. */
let env: TestEnv;
const workers: WorkerProcess[] = [];
let inProcess: RunningGateway | undefined;

beforeAll(async () => {
  env = await createTestEnv();
});

afterAll(async () => {
  await Promise.all(workers.map((w) => stopWorker(w, 'SIGKILL')));
  await inProcess?.close();
  await env.dropAll();
});

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * The first bytes an upload sends before the test acts: enough that the store holds staged bytes of
 * it, a file on disk; on S3, where smaller content waits in memory, a multipart upload.
 */
const firstChunk = (driver: Driver) => Buffer.alloc(driver === 's3' ? PART_SIZE + 1024 * 1024 : 256 * 1024, 7);

describe.each(DRIVERS)('uploads at shutdown on the %s driver', (driver) => {
  let env: TestEnv;
  let stored: StoredContent;
  const gateways: GatewayProcess[] = [];

  beforeAll(async () => {
    env = await createTestEnv(onDriver(driver));
    stored = new StoredContent(env);
  });

  afterAll(async () => {
    await Promise.all(gateways.map((g) => stopProcess(g, 'SIGKILL')));
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await env.dropAll();
  });

  test('an upload in flight when the gateway gets SIGTERM completes with 201, new connections are refused, and the process exits 0', async () => {
    const gateway = await spawnGateway(env, { SHUTDOWN_TIMEOUT_MS: '30000' });
    gateways.push(gateway);
    const { token } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);

    const boundary = `----filesync${newId()}`;
    const first = firstChunk(driver);
    const chunk = Buffer.alloc(256 * 1024, 7);
    const req = http.request(`${gateway.baseUrl}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    const response = new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
      req.on('response', (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body, connection: res.headers.connection }));
      });
      req.on('error', reject);
    });
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
    req.write(first);
    // The gateway is streaming the part to staging: the request is truly in flight.
    await until(async () => (await stored.stagingEntries()).length > 0, 'the staged upload');

    gateway.child.kill('SIGTERM');
    await waitForOutput(gateway, 'gateway stopping');
    await expect(fetch(`${gateway.baseUrl}/healthz`)).rejects.toThrow();

    for (let i = 0; i < 3; i++) req.write(chunk);
    req.end(`\r\n--${boundary}--\r\n`);
    const res = await response;
    const size = first.length + 3 * chunk.length;

    expect(res.status).toBe(201);
    // The keep-alive connection is released with the response rather than held until its timeout.
    expect(res.connection).toBe('close');
    const file = JSON.parse(res.body);
    expect(file.size).toBe(size);
    expect(await gateway.exited).toBe(0);
    expect(gateway.output()).toContain('gateway stopped');
    const row = await env.db('resources').where({ id: file.id }).first();
    expect(Number(row.size_bytes)).toBe(size);
    expect(await stored.store.stat(row.storage_key)).toMatchObject({ size });
    expect(await stored.stagingEntries()).toEqual([]);
  });

  test('an upload still in flight when the shutdown deadline cuts it leaves no staged bytes behind', async () => {
    const gateway = await spawnGateway(env, { SHUTDOWN_TIMEOUT_MS: '500' });
    gateways.push(gateway);
    const { token } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
    const before = await stored.stagingEntries();

    const boundary = `----filesync${newId()}`;
    const req = http.request(`${gateway.baseUrl}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    req.on('error', () => undefined);
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="never-finished.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
    req.write(firstChunk(driver));
    const staged = async () => (await stored.stagingEntries()).filter((k) => !before.includes(k));
    await until(async () => (await staged()).length > 0, 'the staged upload');

    // The client stalls: the upload is still in flight at the deadline and is cut.
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
    req.destroy();

    expect(await staged()).toEqual([]);
    expect(gateway.output()).toContain('removed the staging files of uploads that did not finish');
    expect(await env.db('resources').where({ name: 'never-finished.bin' }).first()).toBeUndefined();
  });
});

test('a worker stopped while it applies a batch of 1000 creates finishes it, the result arrives, and it exits 0', async () => {
  inProcess = await startGateway(env);
  const worker = await spawnWorker(env);
  workers.push(worker);
  const { api, userId } = await new Api(inProcess.baseUrl).login(ADMIN.username, ADMIN.password);
  const ops = Array.from({ length: 1000 }, (_, i) => ({
    opId: i + 1,
    type: 'create',
    resourceId: newId(),
    payload: { resourceType: 'file', name: `f-${i}.txt`, size: i },
  }));

  // Holding the owner's row lock keeps the worker inside the batch (it takes that lock first) until we let go.
  const lock: Knex.Transaction = await env.db.transaction();
  let pending: Promise<ApiResponse>;
  try {
    await lock('users').where({ id: userId }).forUpdate().first('id');
    pending = api.post('/v1/sync/ops', { ops });
    await until(async () => (await Promise.all(inProcess!.sync.queues.map((q) => q.getActiveCount()))).some((n) => n > 0), 'the batch to be active');
    worker.child.kill('SIGTERM');
    await waitForOutput(worker, 'worker stopping');
  } finally {
    await lock.rollback();
  }

  const res = await pending!;
  expect(res.status).toBe(200);
  expect(res.body.failed).toBeNull();
  expect(res.body.applied).toHaveLength(1000);
  expect(await worker.exited).toBe(0);
  const { n } = (await env.db('resources').where({ user_id: userId }).andWhere('name', 'like', 'f-%').count({ n: '*' }).first()) as { n: number };
  expect(Number(n)).toBe(1000);
});
