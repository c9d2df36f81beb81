import { randomBytes, createHash } from 'node:crypto';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { S3ContentStore } from '../../shared/storage/s3/s3.store';
import { createContentStore } from '../../shared/storage/store.factory';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, type TestEnv } from '../support/harness';
import { spawnGateway, stopProcess, type GatewayProcess } from '../support/processes';
import { TusRaw } from '../support/tus';

const MiB = 1024 * 1024;

/**
 * Resumable uploads on S3 (the suite's RGW) with real gateway processes: the upload's parts and info
 * live in the bucket, so a gateway that dies takes nothing of it along.
 */
let env: TestEnv;
let first: GatewayProcess;
let second: GatewayProcess;
let store: S3ContentStore;

beforeAll(async () => {
  env = await createTestEnv({ STORAGE_DRIVER: 's3' });
  [first, second] = await Promise.all([spawnGateway(env), spawnGateway(env)]);
  store = createContentStore(env.config) as S3ContentStore;
});

afterAll(async () => {
  await Promise.all([first && stopProcess(first), second && stopProcess(second)]);
  await env?.dropAll();
});

const unfinishedMultipartUploads = async () =>
  (await store.client.send(new ListMultipartUploadsCommand({ Bucket: store.bucket, Prefix: store.config.prefix }))).Uploads ?? [];

test('an upload created through one gateway continues through another after the first is killed', async () => {
  const admin = (await new Api(first.baseUrl).login(ADMIN.username, ADMIN.password)).api;
  const user = await admin.createUser('traveller');
  const body = randomBytes(13 * MiB + 17);
  const onFirst = new TusRaw(new Api(first.baseUrl, user.token));
  const location = await onFirst.start(body.length, { name: 'travelled.bin' });
  // A whole part (it lands in the multipart upload) and a tail smaller than a part (its own object).
  expect((await onFirst.patch(location, 0, body.subarray(0, 8 * MiB))).status).toBe(204);
  expect((await onFirst.patch(location, 8 * MiB, body.subarray(8 * MiB, 10 * MiB))).status).toBe(204);

  await stopProcess(first, 'SIGKILL');

  const onSecond = new TusRaw(new Api(second.baseUrl, user.token));
  const head = await onSecond.head(location);
  expect(head.status).toBe(200);
  expect(head.headers.get('upload-offset')).toBe(String(10 * MiB));
  const last = await onSecond.patch(location, 10 * MiB, body.subarray(10 * MiB));
  expect(last.status).toBe(200);
  expect(last.body.sha256).toBe(createHash('sha256').update(body).digest('hex'));

  const read = await fetch(`${second.baseUrl}/v1/files/${last.body.id}/content`, { headers: { authorization: `Bearer ${user.token}` } });
  expect(Buffer.from(await read.arrayBuffer()).equals(body)).toBe(true);
  // The upload's objects are gone once it became a file.
  const left: string[] = [];
  for await (const o of store.list('.tus/')) left.push(o.key);
  expect(left).toEqual([]);
  expect(await unfinishedMultipartUploads()).toEqual([]);
});

test('an expired upload is removed by the expiry sweep, its multipart upload aborted', async () => {
  const admin = (await new Api(second.baseUrl).login(ADMIN.username, ADMIN.password)).api;
  const user = await admin.createUser('abandoner');
  const tus = new TusRaw(new Api(second.baseUrl, user.token));
  const location = await tus.start(12 * MiB, { name: 'abandoned.bin' });
  expect((await tus.patch(location, 0, randomBytes(9 * MiB))).status).toBe(204);
  expect(await unfinishedMultipartUploads()).toHaveLength(1);

  // The sweep the workers schedule, with an expiry that has passed already.
  const removed = await createContentStore(env.config).resumable.dataStore(1).deleteExpired();

  expect(removed).toBe(1);
  expect(await unfinishedMultipartUploads()).toEqual([]);
  const left: string[] = [];
  for await (const o of store.list('.tus/')) left.push(o.key);
  expect(left).toEqual([]);
  expect((await tus.head(location)).status).toBe(404);
});
