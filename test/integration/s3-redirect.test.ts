import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { S3ContentStore } from '../../shared/storage/s3/s3.store';
import { Api } from '../support/client';
import { basic, createAppPassword, DavClient } from '../support/dav';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/**
 * S3_DOWNLOADS=redirect on the suite's RGW: a whole-content GET answers 302 to a presigned URL that a
 * plain HTTP client (no credentials of ours) follows to the bytes, with the Content-Disposition and
 * Content-Type the gateway sends itself; everything else is still served by the gateway.
 */

let env: TestEnv;
let gateway: RunningGateway;
let api: Api;
let token: string;

beforeAll(async () => {
  env = await createTestEnv({ STORAGE_DRIVER: 's3', S3_DOWNLOADS: 'redirect' });
  gateway = await startGateway(env);
  ({ api, token } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password));
});

afterAll(async () => {
  await gateway?.close();
  await env?.dropAll();
});

/** The gateway's answer itself, its redirect not followed. */
const unfollowed = (path: string, headers: Record<string, string> = {}) =>
  fetch(gateway.baseUrl + path, { headers: { authorization: `Bearer ${token}`, ...headers }, redirect: 'manual' });

async function upload(name: string, content: Buffer, type: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([content], { type }), name);
  const res = await api.request('POST', '/v1/files', { body: form });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** Follows a 302 the way a client does: a plain GET of the Location, no Authorization. */
async function follow(res: Response): Promise<{ bytes: Buffer; headers: Headers; status: number }> {
  expect(res.status).toBe(302);
  const location = res.headers.get('location')!;
  expect(new URL(location).origin).toBe(new URL(env.config.s3!.endpoint!).origin);
  const got = await fetch(location);
  return { bytes: Buffer.from(await got.arrayBuffer()), headers: got.headers, status: got.status };
}

test('a whole-content GET redirects to a URL valid at most 5 minutes that serves the bytes with the gateway\'s headers', async () => {
  const body = randomBytes(3 * 1024 * 1024 + 5);
  // A name that needs filename* (non-ASCII) and quoting: the store must send exactly the gateway's encoding.
  const name = 'Résumé "final" 2026.txt';
  const id = await upload(name, body, 'text/plain');
  const res = await unfollowed(`/v1/files/${id}/content`);
  expect(res.status).toBe(302);
  const url = new URL(res.headers.get('location')!);
  expect(Number(url.searchParams.get('X-Amz-Expires'))).toBeLessThanOrEqual(300);
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{64}"$/);
  expect(res.headers.get('content-disposition')).toBeNull();

  const followed = await follow(res);
  expect(followed.status).toBe(200);
  expect(followed.bytes.equals(body)).toBe(true);
  // HEAD is the gateway's own answer: the headers a proxied download carries.
  const own = await api.request('HEAD', `/v1/files/${id}/content`);
  expect(own.status).toBe(200);
  expect(own.headers.get('content-disposition')).toContain("filename*=UTF-8''R%C3%A9sum%C3%A9");
  expect(followed.headers.get('content-disposition')).toBe(own.headers.get('content-disposition'));
  expect(followed.headers.get('content-type')).toBe(own.headers.get('content-type'));
  expect(own.headers.get('content-type')).toBe('text/plain; charset=utf-8');
});

test('a Range, an If-Match, a HEAD and an If-None-Match hit are answered by the gateway itself', async () => {
  const body = randomBytes(200_000);
  const id = await upload('ranged.bin', body, 'application/octet-stream');
  const part = await unfollowed(`/v1/files/${id}/content`, { range: 'bytes=1000-1999' });
  expect(part.status).toBe(206);
  expect(part.headers.get('content-range')).toBe(`bytes 1000-1999/${body.length}`);
  expect(Buffer.from(await part.arrayBuffer()).equals(body.subarray(1000, 2000))).toBe(true);

  const etag = part.headers.get('etag')!;
  const matched = await unfollowed(`/v1/files/${id}/content`, { 'if-match': etag });
  expect(matched.status).toBe(200);
  expect(Buffer.from(await matched.arrayBuffer()).equals(body)).toBe(true);
  expect((await unfollowed(`/v1/files/${id}/content`, { 'if-match': '"other"' })).status).toBe(412);
  expect((await unfollowed(`/v1/files/${id}/content`, { 'if-none-match': etag })).status).toBe(304);
  const head = await api.request('HEAD', `/v1/files/${id}/content`);
  expect(head.status).toBe(200);
  expect(head.headers.get('location')).toBeNull();
  expect(head.headers.get('content-length')).toBe(String(body.length));
});

test("a version's whole content redirects too, to that version's bytes; its ranges stay proxied", async () => {
  const first = Buffer.from('the first content of the file');
  const id = await upload('versioned.txt', first, 'text/plain');
  const put = await api.request('PUT', `/v1/files/${id}/content`, { body: 'the second content', headers: { 'content-type': 'text/plain' } });
  expect(put.status).toBe(200);
  const versions = (await api.get(`/v1/files/${id}/versions`)).body.items as Array<{ id: string }>;
  expect(versions).toHaveLength(1);
  const path = `/v1/files/${id}/versions/${versions[0]!.id}/content`;
  const followed = await follow(await unfollowed(path));
  expect(followed.bytes.toString()).toBe(first.toString());
  const own = await api.request('HEAD', path);
  expect(own.headers.get('content-disposition')).toBe('attachment; filename=versioned.txt');
  expect(followed.headers.get('content-disposition')).toBe(own.headers.get('content-disposition'));
  expect(followed.headers.get('content-type')).toBe(own.headers.get('content-type'));
  const part = await unfollowed(path, { range: 'bytes=4-8' });
  expect(part.status).toBe(206);
  expect(await part.text()).toBe('first');
});

test('WebDAV GET is served by the gateway', async () => {
  const id = await upload('over-dav.txt', Buffer.from('read over WebDAV'), 'text/plain');
  expect(id).toMatch(/^[0-9a-f]{32}$/);
  const password = await createAppPassword(api, 'dav on redirect');
  const dav = new DavClient(gateway.baseUrl, basic(ADMIN.username, password.password));
  const got = await dav.request('GET', '/dav/over-dav.txt');
  expect(got.status).toBe(200);
  expect(got.text).toBe('read over WebDAV');
});

test('URLs are signed for S3_PUBLIC_ENDPOINT when set, and read there', async () => {
  const endpoint = new URL(env.config.s3!.endpoint!);
  // The same RGW under another host name, as clients outside the network would reach it.
  const publicEndpoint = `http://localhost:${endpoint.port}`;
  // Spelled out: the credentials are not enumerable, a spread leaves them behind.
  const store = new S3ContentStore({ ...env.config.s3!, credentials: env.config.s3!.credentials, publicEndpoint });
  const key = `dev/${randomBytes(4).toString('hex')}.txt`;
  const staged = await store.stage(Readable.from([Buffer.from('through the public endpoint')]), { maxBytes: 1024 });
  await store.place(staged, key);
  const url = await store.downloadUrl(key, { contentDisposition: 'attachment; filename="p.txt"', contentType: 'text/plain; charset=utf-8' });
  expect(url!.startsWith(`${publicEndpoint}/`)).toBe(true);
  const got = await fetch(url!);
  expect(got.status).toBe(200);
  expect(await got.text()).toBe('through the public endpoint');
  expect(got.headers.get('content-disposition')).toBe('attachment; filename="p.txt"');
  await store.remove(key);
});
