import { randomBytes } from 'node:crypto';
import { S3ContentStore } from '../../shared/storage/s3/s3.store';
import { createContentStore } from '../../shared/storage/store.factory';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/**
 * Downloads on S3 whose read starts before the file's row is read (content.prefetch.ts): the row
 * decides what the client gets, whatever the early read asked for.
 */

let env: TestEnv;
let gateway: RunningGateway;
let store: S3ContentStore;
let api: Api;

beforeAll(async () => {
  env = await createTestEnv({ STORAGE_DRIVER: 's3' });
  store = createContentStore(env.config) as S3ContentStore;
  gateway = await startGateway(env, {}, { store });
  ({ api } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password));
});

afterAll(async () => {
  await gateway?.close();
  await env?.dropAll();
});

const text = (bytes: number) => randomBytes(bytes / 2).toString('hex');

async function upload(name: string, content: string): Promise<string> {
  const res = await api.upload({}, { name, content });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

test('a file downloaded before is read early: whole and by range, the bytes of the content its row names', async () => {
  const content = text(300_000);
  const id = await upload('early.txt', content);
  const before = { ...store.prefetches };
  expect((await api.get(`/v1/files/${id}/content`)).text).toBe(content);
  // The first download has nothing to start early from.
  expect(store.prefetches).toEqual(before);

  expect((await api.get(`/v1/files/${id}/content`)).text).toBe(content);
  const part = await api.get(`/v1/files/${id}/content`, { range: 'bytes=1000-1999' });
  expect(part.status).toBe(206);
  expect(part.text).toBe(content.slice(1000, 2000));
  const tail = await api.get(`/v1/files/${id}/content`, { range: 'bytes=-10' });
  expect(tail.text).toBe(content.slice(-10));
  expect(store.prefetches).toEqual({ used: before.used + 3, dropped: before.dropped });
});

test('a file replaced since gets its new content, and the early read of the old is dropped', async () => {
  const id = await upload('replaced.txt', text(5000));
  await api.get(`/v1/files/${id}/content`);
  const newer = text(7000);
  expect((await api.request('PUT', `/v1/files/${id}/content`, { body: newer, headers: { 'content-type': 'text/plain' } })).status).toBe(200);
  const before = { ...store.prefetches };
  expect((await api.get(`/v1/files/${id}/content`)).text).toBe(newer);
  expect(store.prefetches).toEqual({ used: before.used, dropped: before.dropped + 1 });
  // The new content is the one read early from now on.
  expect((await api.get(`/v1/files/${id}/content`)).text).toBe(newer);
  expect(store.prefetches.used).toBe(before.used + 1);
});

test('a deleted file is not found, and its early read is dropped', async () => {
  const id = await upload('deleted.txt', text(4000));
  await api.get(`/v1/files/${id}/content`);
  expect((await api.delete(`/v1/files/${id}`)).status).toBe(200);
  const before = { ...store.prefetches };
  expect((await api.get(`/v1/files/${id}/content`)).status).toBe(404);
  expect(store.prefetches).toEqual({ used: before.used, dropped: before.dropped + 1 });
});

test("another user's request for the file starts nothing and gets nothing", async () => {
  const id = await upload('private.txt', text(4000));
  await api.get(`/v1/files/${id}/content`);
  const other = (await api.createUser(`other${randomBytes(3).toString('hex')}`)).api;
  const before = { ...store.prefetches };
  expect((await other.get(`/v1/files/${id}/content`)).status).toBe(404);
  expect(store.prefetches).toEqual(before);
});

test('HEAD, a conditional request and a range past the end start no early read, and answer as before', async () => {
  const content = text(4000);
  const id = await upload('conditional.txt', content);
  const first = await api.get(`/v1/files/${id}/content`);
  const before = { ...store.prefetches };
  expect((await api.request('HEAD', `/v1/files/${id}/content`)).status).toBe(200);
  expect((await api.get(`/v1/files/${id}/content`, { 'if-none-match': first.headers.get('etag')! })).status).toBe(304);
  expect((await api.get(`/v1/files/${id}/content`, { 'if-match': first.headers.get('etag')! })).text).toBe(content);
  expect((await api.get(`/v1/files/${id}/content`, { range: 'bytes=9000-9999' })).status).toBe(416);
  expect(store.prefetches).toEqual(before);
});
