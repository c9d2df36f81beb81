import { randomBytes } from 'node:crypto';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/**
 * Downloads on S3 streamed through the gateway (S3_DOWNLOADS=proxy, the default): the file's row
 * decides what the client gets, read after read, whole and by range.
 */

let env: TestEnv;
let gateway: RunningGateway;
let api: Api;

beforeAll(async () => {
  env = await createTestEnv({ STORAGE_DRIVER: 's3' });
  gateway = await startGateway(env);
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

test('a file downloaded again and again: whole and by range, the bytes of the content its row names', async () => {
  const content = text(300_000);
  const id = await upload('again.txt', content);
  const first = await api.get(`/v1/files/${id}/content`);
  expect(first.status).toBe(200);
  expect(first.text).toBe(content);
  expect(first.headers.get('content-disposition')).toBe('attachment; filename=again.txt');

  expect((await api.get(`/v1/files/${id}/content`)).text).toBe(content);
  const part = await api.get(`/v1/files/${id}/content`, { range: 'bytes=1000-1999' });
  expect(part.status).toBe(206);
  expect(part.text).toBe(content.slice(1000, 2000));
  const tail = await api.get(`/v1/files/${id}/content`, { range: 'bytes=-10' });
  expect(tail.text).toBe(content.slice(-10));
});

test('a file replaced since its last download gets its new content', async () => {
  const id = await upload('replaced.txt', text(5000));
  await api.get(`/v1/files/${id}/content`);
  const newer = text(7000);
  expect((await api.request('PUT', `/v1/files/${id}/content`, { body: newer, headers: { 'content-type': 'text/plain' } })).status).toBe(200);
  expect((await api.get(`/v1/files/${id}/content`)).text).toBe(newer);
  expect((await api.get(`/v1/files/${id}/content`)).text).toBe(newer);
});

test('a deleted file is not found', async () => {
  const id = await upload('deleted.txt', text(4000));
  await api.get(`/v1/files/${id}/content`);
  expect((await api.delete(`/v1/files/${id}`)).status).toBe(200);
  expect((await api.get(`/v1/files/${id}/content`)).status).toBe(404);
});

test("another user's request for the file gets nothing", async () => {
  const id = await upload('private.txt', text(4000));
  await api.get(`/v1/files/${id}/content`);
  const other = (await api.createUser(`other${randomBytes(3).toString('hex')}`)).api;
  expect((await other.get(`/v1/files/${id}/content`)).status).toBe(404);
});

test('HEAD, a conditional request and a range past the end answer as on any store', async () => {
  const content = text(4000);
  const id = await upload('conditional.txt', content);
  const first = await api.get(`/v1/files/${id}/content`);
  expect((await api.request('HEAD', `/v1/files/${id}/content`)).status).toBe(200);
  expect((await api.get(`/v1/files/${id}/content`, { 'if-none-match': first.headers.get('etag')! })).status).toBe(304);
  expect((await api.get(`/v1/files/${id}/content`, { 'if-match': first.headers.get('etag')! })).text).toBe(content);
  expect((await api.get(`/v1/files/${id}/content`, { range: 'bytes=9000-9999' })).status).toBe(416);
});
