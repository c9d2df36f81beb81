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

test('edits of many small files go up many to a request and come down many to a response, each replacing its own file and keeping its version', async () => {
  const username = `bulkedit${randomBytes(4).toString('hex')}`;
  const password = 'bulk-password-1';
  await stack.admin.post('/v1/users', { username, password });
  const env = (device: string) => ({ FILESYNC_SERVER: proxyUrl, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: password, FILESYNC_DEVICE_NAME: device });
  const a = await tempDir('cli-bulk-edit-a');
  const b = await tempDir('cli-bulk-edit-b');
  for (let i = 0; i < 40; i++) await fs.writeFile(path.join(a, `page-${i}.txt`), `first ${i}`);
  for (const [dir, device] of [[a, 'laptop'], [b, 'desktop']] as const) {
    const run = await runCli(['sync', dir, '--once'], env(device));
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  }
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password, deviceId: (await api.registerDevice({ name: 'check' })).id });
  const idsBefore = (await api.changes({ limit: 1000 })).items.map((c) => c.id).sort();

  // Every file edited, one of them first on the other device: its bytes keep the name, these become a conflicted copy.
  for (let i = 0; i < 40; i++) await fs.writeFile(path.join(a, `page-${i}.txt`), `second ${i} ${'x'.repeat(i * 100)}`);
  await fs.writeFile(path.join(b, 'page-7.txt'), 'edited on the desktop first');
  const first = await runCli(['sync', b, '--once'], env('desktop'));
  expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: '' });

  requests.clear();
  const up = await runCli(['sync', a, '--once'], env('laptop'));
  expect({ code: up.code, stderr: up.stderr }).toEqual({ code: 0, stderr: '' });
  expect(requests.get('POST /v1/files/bulk')).toBe(1);
  expect(requests.get('PUT /v1/files/:id/content') ?? 0).toBe(0);
  expect(up.stdout).toMatch(/^conflict: kept page-7\.txt as page-7 \(conflicted copy laptop /m);

  requests.clear();
  const down = await runCli(['sync', b, '--once'], env('desktop'));
  expect({ code: down.code, stderr: down.stderr }).toEqual({ code: 0, stderr: '' });
  expect(down.stdout.match(/^downloaded /gm)).toHaveLength(40);
  // The 39 replaced come many to a response; the conflicted copy, a new file alone, on its own.
  expect(requests.get('POST /v1/files/bulk/content')).toBe(1);
  expect(requests.get('GET /v1/files/:id/content')).toBe(1);
  expect(sorted(await readTree(b))).toEqual(sorted(await readTree(a)));
  expect(sorted(await serverTree(api))).toEqual(sorted(await readTree(a)));
  expect(await fs.readFile(path.join(a, 'page-7.txt'), 'utf8')).toBe('edited on the desktop first');
  expect(await fs.readFile(path.join(a, 'page-12.txt'), 'utf8')).toBe(`second 12 ${'x'.repeat(1200)}`);
  // The same files, replaced: the earlier bytes are versions of them.
  const page12 = (await api.changes({ limit: 1000 })).items.find((c) => c.name === 'page-12.txt')!;
  expect(idsBefore).toContain(page12.id);
  const versions = await api.listVersions(page12.id);
  expect(versions.items.length).toBeGreaterThanOrEqual(1);
}, 300_000);
