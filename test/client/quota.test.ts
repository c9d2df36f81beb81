import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { runCli, serverTree, tempDir } from './cli.support';

/**
 * docs/CLIENT.md guarantee 7 against a service that refuses content for the quota. A small forwarding
 * proxy in front of the real gateway answers content writes with the API's 507 while `full` is
 * set (whether or not this service build enforces quotas), and forwards everything else unchanged.
 */
let stack: TestStack;
let proxy: http.Server;
let proxyUrl: string;
let full = false;

beforeAll(async () => {
  stack = await startStack();
  const target = new URL(stack.gateway.baseUrl);
  proxy = http.createServer((req, res) => {
    const write = (req.method === 'POST' && req.url === '/v1/files') || (req.method === 'PUT' && /\/content$/.test(req.url ?? ''));
    if (full && write) {
      req.resume();
      req.on('end', () => {
        res.writeHead(507, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'QUOTA_EXCEEDED', message: 'quota exceeded', details: { quotaBytes: 10, usedBytes: 10, neededBytes: 5 } } }));
      });
      return;
    }
    const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent: false }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await stack.close();
});

test('a content refused with 507 stays local, is reported as quota exceeded, makes --once exit 1, and is sent on a later run', async () => {
  const username = `quota${randomBytes(4).toString('hex')}`;
  await stack.admin.post('/v1/users', { username, password: 'quota-password-1' });
  const env = { FILESYNC_SERVER: proxyUrl, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: 'quota-password-1', FILESYNC_DEVICE_NAME: 'laptop' };
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password: 'quota-password-1', deviceId: (await api.registerDevice({ name: 'api' })).id });
  const dir = await tempDir('cli-quota');
  await fs.writeFile(path.join(dir, 'a.txt'), 'first');
  expect((await runCli(['sync', dir, '--once'], env)).code).toBe(0);

  full = true;
  await fs.writeFile(path.join(dir, 'b.txt'), 'does not fit');
  await fs.mkdir(path.join(dir, 'folder'));
  const refused = await runCli(['sync', dir, '--once'], env);
  expect(refused.code).toBe(1);
  expect(refused.stdout).toContain('quota exceeded: b.txt');
  expect(existsSync(path.join(dir, 'b.txt'))).toBe(true);
  expect([...(await serverTree(api)).keys()].sort()).toEqual(['a.txt', 'folder']);

  full = false;
  const later = await runCli(['sync', dir, '--once'], env);
  expect(later.code).toBe(0);
  expect(later.stdout).toContain('uploaded b.txt');
  expect([...(await serverTree(api)).keys()].sort()).toEqual(['a.txt', 'b.txt', 'folder']);
});
