import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { readTree, requestProxy, runCli, serverTree, sorted, tempDir } from './cli.support';

/*
 * Many small files travel together: a device sends new small files many to a request and another
 * fetches them many to a response, seen by a proxy that tallies the requests by route.
 */
let stack: TestStack;
let proxy: Awaited<ReturnType<typeof requestProxy>>;
let proxyUrl: string;
const requests = new Map<string, number>();

beforeAll(async () => {
  stack = await startStack();
  proxy = await requestProxy(stack.gateway.baseUrl, (line) => {
    const route = line.split('?')[0]!.replace(/[0-9a-f]{32}/g, ':id');
    requests.set(route, (requests.get(route) ?? 0) + 1);
  });
  proxyUrl = proxy.url;
});

afterAll(async () => {
  await proxy.close();
  await stack.close();
});

test('300 small files go up in a few bulk requests and come down in a few bulk responses, byte for byte', async () => {
  const username = `bulk${randomBytes(4).toString('hex')}`;
  const password = 'bulk-password-1';
  await stack.admin.post('/v1/users', { username, password });
  const env = (device: string) => ({ FILESYNC_SERVER: proxyUrl, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: password, FILESYNC_DEVICE_NAME: device });
  const a = await tempDir('cli-bulk-a');
  const b = await tempDir('cli-bulk-b');
  await fs.mkdir(path.join(a, 'docs'));
  for (let i = 0; i < 300; i++) await fs.writeFile(path.join(a, i % 2 ? 'docs' : '', `note-${i}.txt`), randomBytes(4096));
  await fs.writeFile(path.join(a, 'large.bin'), randomBytes(BULK_LARGE));

  requests.clear();
  const up = await runCli(['sync', a, '--once'], env('laptop'));
  expect({ code: up.code, stderr: up.stderr }).toEqual({ code: 0, stderr: '' });
  expect(up.stdout.match(/^uploaded /gm)).toHaveLength(301);
  expect(requests.get('POST /v1/files/bulk')).toBeLessThanOrEqual(4);
  // Only the large file goes alone.
  expect(requests.get('POST /v1/files') ?? 0).toBe(1);

  requests.clear();
  const down = await runCli(['sync', b, '--once'], env('desktop'));
  expect({ code: down.code, stderr: down.stderr }).toEqual({ code: 0, stderr: '' });
  expect(down.stdout.match(/^downloaded /gm)).toHaveLength(301);
  expect(requests.get('POST /v1/files/bulk/content')).toBeLessThanOrEqual(4);
  expect(requests.get('GET /v1/files/:id/content')).toBe(1);

  expect(sorted(await readTree(b))).toEqual(sorted(await readTree(a)));
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password, deviceId: (await api.registerDevice({ name: 'check' })).id });
  expect(sorted(await serverTree(api))).toEqual(sorted(await readTree(a)));
}, 300_000);

const BULK_LARGE = 1024 * 1024;
