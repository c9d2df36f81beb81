import { createHash, randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { readTree, runCli, sha256, tempDir } from './cli.support';

/**
 * docs/CLIENT.md guarantee 4 ("What it keeps, and starting over"): a download is placed in DIR only once its
 * SHA-256 is the one the service announced, whatever the response carries. A forwarding proxy in
 * front of the real gateway plays the two cases the gateway alone does not: content served from the
 * store by a 302 to a presigned URL on another origin (S3_DOWNLOADS=redirect, docs/SYNC-CLIENT.md), with the
 * store's ETag and no Repr-Digest, and a response without any digest header; either may be damaged.
 */
let stack: TestStack;
let proxy: http.Server;
let store: http.Server;
let proxyUrl: string;
let storeUrl: string;
let mode: 'redirect' | 'bare' = 'redirect';
let corrupt = false;
/** The Authorization header of each request the store received. */
const storeAuth: (string | undefined)[] = [];
const grants = new Map<string, string>();

const damage = (body: Buffer) => (corrupt && body.length > 0 ? Buffer.concat([Buffer.from([body[0]! ^ 0xff]), body.subarray(1)]) : body);

function fetchUpstream(target: URL, pathname: string, headers: http.IncomingHttpHeaders): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: target.hostname, port: target.port, method: 'GET', path: pathname, headers, agent: false }, (up) => {
      const chunks: Buffer[] = [];
      up.on('data', (c: Buffer) => chunks.push(c));
      up.on('end', () => resolve({ status: up.statusCode ?? 502, headers: up.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  stack = await startStack();
  const target = new URL(stack.gateway.baseUrl);
  store = http.createServer(async (req, res) => {
    storeAuth.push(req.headers.authorization);
    const key = new URL(req.url ?? '', 'http://x').pathname.slice('/bucket/'.length);
    const grant = grants.get(key);
    if (!grant) return void res.writeHead(403).end();
    const up = await fetchUpstream(target, `/v1/files/${grant}/content`, { authorization: grants.get(`${key}:auth`)! });
    const body = damage(up.body);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(body.length), etag: `"${createHash('md5').update(up.body).digest('hex')}"` });
    res.end(body);
  });
  proxy = http.createServer(async (req, res) => {
    const content = req.method === 'GET' && /^\/v1\/files\/[0-9a-f]{32}\/content$/.test(req.url ?? '') && !req.headers.range;
    if (content && mode === 'redirect') {
      const key = randomBytes(8).toString('hex');
      grants.set(key, (req.url ?? '').split('/')[3]!);
      grants.set(`${key}:auth`, req.headers.authorization ?? '');
      req.resume();
      res.writeHead(302, { location: `${storeUrl}/bucket/${key}?X-Amz-Signature=${randomBytes(8).toString('hex')}` });
      return void res.end();
    }
    if (content) {
      const up = await fetchUpstream(target, req.url!, req.headers);
      const body = damage(up.body);
      const { etag: _etag, 'repr-digest': _digest, ...headers } = up.headers;
      res.writeHead(up.status, { ...headers, 'content-length': String(body.length) });
      return void res.end(body);
    }
    const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent: false }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  for (const server of [proxy, store]) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  storeUrl = `http://127.0.0.1:${(store.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const server of [proxy, store]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await stack.close();
});

async function account() {
  const username = `digest${randomBytes(4).toString('hex')}`;
  await stack.admin.post('/v1/users', { username, password: 'digest-password-1' });
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password: 'digest-password-1', deviceId: (await api.registerDevice({ name: 'api' })).id });
  const env = { FILESYNC_SERVER: proxyUrl, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: 'digest-password-1', FILESYNC_DEVICE_NAME: 'laptop' };
  return { api, env };
}

test('content redirected to the store is fetched without the Authorization header and checked against the announced SHA-256', async () => {
  const a = await account();
  mode = 'redirect';
  corrupt = false;
  const bytes = randomBytes(200 * 1024);
  const file = await a.api.uploadFile({ content: bytes, name: 'photo.bin' });

  // The SDK: the redirect is followed, the store's answer carries no digest of the service.
  const sdk = new FilesyncClient({ server: proxyUrl, token: a.api.token });
  storeAuth.length = 0;
  const res = await sdk.download(file.id);
  expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(sha256(bytes));
  expect(sdk.announcedDigest(res)).toBeUndefined();
  expect(storeAuth).toEqual([undefined]);

  const dir = await tempDir('digest-redirect');
  const run = await runCli(['sync', dir, '--once'], a.env);
  expect(run.code).toBe(0);
  expect(run.stdout).toContain('downloaded photo.bin');
  expect((await readTree(dir)).get('photo.bin')).toBe(sha256(bytes));
  expect(storeAuth.length).toBeGreaterThan(1);
  expect(storeAuth.every((h) => h === undefined)).toBe(true);
});

test('damaged content is never placed in DIR, redirected or served without a digest header; it comes once it is whole', async () => {
  const a = await account();
  await a.api.uploadFile({ content: Buffer.from('the real bytes of a.txt'), name: 'a.txt' });
  for (const m of ['redirect', 'bare'] as const) {
    mode = m;
    corrupt = true;
    const dir = await tempDir(`digest-${m}`);
    const res = await runCli(['sync', dir, '--once'], a.env);
    expect([m, res.code]).toEqual([m, 1]);
    expect(res.stderr).toContain('did not match');
    expect(existsSync(path.join(dir, 'a.txt'))).toBe(false);
    expect(await fs.readdir(path.join(dir, '.filesync', 'tmp'))).toEqual([]);

    corrupt = false;
    const again = await runCli(['sync', dir, '--once'], a.env);
    expect([m, again.code]).toEqual([m, 0]);
    expect(await fs.readFile(path.join(dir, 'a.txt'), 'utf8')).toBe('the real bytes of a.txt');
  }
});
