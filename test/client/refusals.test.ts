import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { readTree, runCli, sha256, sorted, tempDir } from './cli.support';

/**
 * docs/CLIENT.md guarantee 6 ("Names"), its local half: server names this disk cannot hold
 * and ids that are not ids are reported and left on the server, never written elsewhere; and what
 * `--once` says about content it could not send. The service refuses uploads over 64 KiB here.
 * Names the service itself refuses (`..`, `/`, NUL) reach the client only through a forwarding proxy
 * that rewrites them into the change feed, as a hostile or broken service could.
 */
let stack: TestStack;
let proxy: http.Server;
let proxyUrl: string;
/** Real name in the feed -> what the proxy says instead; real id -> the id it says instead. */
const names = new Map<string, string>();
const ids = new Map<string, string>();

beforeAll(async () => {
  stack = await startStack({ MAX_UPLOAD_BYTES: String(64 * 1024) });
  const target = new URL(stack.gateway.baseUrl);
  proxy = http.createServer((req, res) => {
    let url = req.url ?? '';
    for (const [real, fake] of ids) url = url.split(encodeURIComponent(fake)).join(real);
    const feed = url.startsWith('/v1/sync/changes');
    const headers = { ...req.headers };
    if (feed) delete headers['accept-encoding'];
    const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: url, headers, agent: false }, (up) => {
      if (!feed || up.statusCode !== 200) {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      up.on('data', (c: Buffer) => chunks.push(c));
      up.on('end', () => {
        const page = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { items: { id: string; name: string }[] };
        for (const item of page.items) {
          item.name = names.get(item.name) ?? item.name;
          item.id = ids.get(item.id) ?? item.id;
        }
        const body = JSON.stringify(page);
        const out = { ...up.headers, 'content-length': String(Buffer.byteLength(body)) };
        res.writeHead(200, out);
        res.end(body);
      });
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

async function account(server = stack.gateway.baseUrl) {
  const username = `refuse${randomBytes(4).toString('hex')}`;
  await stack.admin.post('/v1/users', { username, password: 'refuse-password-1' });
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password: 'refuse-password-1', deviceId: (await api.registerDevice({ name: 'api' })).id });
  const env = (device: string) => ({ FILESYNC_SERVER: server, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: 'refuse-password-1', FILESYNC_DEVICE_NAME: device });
  return { api, env };
}

test('a name of 255 CJK characters (765 bytes) is reported and left on the server; the rest syncs, now and later', async () => {
  const a = await account();
  const long = '文'.repeat(255);
  await a.api.uploadFile({ content: Buffer.from('too long a name here'), name: long });
  const folder = await a.api.syncOps([{ opId: '1', type: 'create', resourceId: randomBytes(16).toString('hex'), payload: { resourceType: 'folder', name: `${'字'.repeat(255)}`, parentId: null } }]);
  expect(folder.failed).toBeNull();
  await a.api.uploadFile({ content: Buffer.from('fine'), name: 'fine.txt' });
  const dir = await tempDir('refuse-long');

  const first = await runCli(['sync', dir, '--once'], a.env('laptop'));
  expect(first.code).toBe(0);
  expect(first.stdout).toContain(`skipped: ${long}: `);
  expect(first.stdout).toContain(`skipped: ${'字'.repeat(255)}: `);
  expect(first.stdout).toContain('downloaded fine.txt');
  expect(sorted(await readTree(dir))).toEqual([['fine.txt', sha256('fine')]]);

  // Later passes keep working: a new file comes down, a local one goes up, the long name stays there.
  await a.api.uploadFile({ content: Buffer.from('later'), name: 'later.txt' });
  await fs.writeFile(path.join(dir, 'local.txt'), 'local');
  const later = await runCli(['sync', dir, '--once'], a.env('laptop'));
  expect(later.code).toBe(0);
  expect(later.stdout).toContain('downloaded later.txt');
  expect(later.stdout).toContain('uploaded local.txt');
  const server = (await a.api.listFiles({ limit: 100 })).items.map((f) => f.name).sort();
  expect(server).toEqual(['fine.txt', 'later.txt', 'local.txt', long].sort());
  expect((await runCli(['sync', dir, '--once'], a.env('laptop'))).code).toBe(0);
});

test("names shaped like '..', '.', a path or holding a NUL, and ids that are not ids, never leave DIR and are skipped", async () => {
  const a = await account(proxyUrl);
  const tag = randomBytes(3).toString('hex');
  const outside = `outside-${tag}.txt`;
  const hostile: [string, string][] = [
    [`dotdot-${tag}`, '..'],
    [`dot-${tag}`, '.'],
    [`slash-${tag}.txt`, `../${outside}`],
    [`nul-${tag}.txt`, 'a\u0000b.txt'],
  ];
  for (const [real, fake] of hostile) {
    names.set(real, fake);
    await a.api.uploadFile({ content: Buffer.from(`bytes of ${real}`), name: real });
  }
  // A folder the feed calls '..' with a file in it: the file stays with its folder.
  const up = (await a.api.syncOps([{ opId: '1', type: 'create', resourceId: randomBytes(16).toString('hex'), payload: { resourceType: 'folder', name: `up-${tag}`, parentId: null } }])).applied[0]!;
  names.set(`up-${tag}`, '..');
  await a.api.uploadFile({ content: Buffer.from('inside'), name: `escape-${tag}.txt`, folderId: up.resourceId! });
  // An id that would name a path out of the state folder.
  const evil = await a.api.uploadFile({ content: Buffer.from('evil id'), name: `evil-id-${tag}.txt` });
  ids.set(evil.id, `../../../../escape-${tag}`);
  await a.api.uploadFile({ content: Buffer.from('fine'), name: 'fine.txt' });

  const parent = path.join(await tempDir('refuse-hostile'), 'inner');
  await fs.mkdir(parent);
  const dir = path.join(parent, 'dir');
  await fs.mkdir(dir);
  const res = await runCli(['sync', dir, '--once'], a.env('laptop'));
  expect(res.code).toBe(0);
  for (const shown of ['..', '.', `../${outside}`, 'a\\u0000b.txt', `evil-id-${tag}.txt`]) expect(res.stdout).toContain(`skipped: ${shown}: `);
  expect(sorted(await readTree(dir))).toEqual([['fine.txt', sha256('fine')]]);
  // Nothing was written beside DIR or above it.
  expect((await fs.readdir(parent)).sort()).toEqual(['dir']);
  expect((await fs.readdir(path.dirname(parent))).sort()).toEqual(['inner']);
  expect(existsSync(path.join(dir, '.filesync', 'tmp'))).toBe(true);
  expect(await fs.readdir(path.join(dir, '.filesync', 'tmp'))).toEqual([]);

  const again = await runCli(['sync', dir, '--once'], a.env('laptop'));
  expect(again.code).toBe(0);
  expect(sorted(await readTree(dir))).toEqual([['fine.txt', sha256('fine')]]);
  // Left on the server, every one of them.
  expect((await a.api.listFiles({ limit: 100 })).items.length).toBe(6);
  expect((await a.api.listFiles({ folderId: up.resourceId! })).items.map((f) => f.name)).toEqual([`escape-${tag}.txt`]);
});

test('a file over the upload limit is reported and left unsent: --once exits 1; a downloaded file gets the umask mode', async () => {
  const a = await account();
  const dir = await tempDir('refuse-large');
  await fs.writeFile(path.join(dir, 'toolarge.bin'), randomBytes(100 * 1024));
  await fs.writeFile(path.join(dir, 'small.txt'), 'small');
  await a.api.uploadFile({ content: Buffer.from('from the server'), name: 'down.txt' });
  const res = await runCli(['sync', dir, '--once'], a.env('laptop'));
  expect(res.code).toBe(1);
  expect(res.stderr).toContain('toolarge.bin');
  expect(res.stdout).toContain('uploaded small.txt');
  expect(res.stdout).toContain('downloaded down.txt');
  expect(existsSync(path.join(dir, 'toolarge.bin'))).toBe(true);
  expect((await a.api.listFiles({ limit: 100 })).items.map((f) => f.name).sort()).toEqual(['down.txt', 'small.txt']);

  // Created like any file here: the umask decides (0644 under 022), not 0600; the state stays 0600.
  const umask = process.umask();
  const mode = (await fs.stat(path.join(dir, 'down.txt'))).mode & 0o777;
  expect(mode).toBe(0o666 & ~umask);
  expect(mode).toBe((await fs.stat(path.join(dir, 'small.txt'))).mode & 0o777);
  expect((await fs.stat(path.join(dir, '.filesync', 'journal.db'))).mode & 0o777).toBe(0o600);

  await fs.rm(path.join(dir, 'toolarge.bin'));
  expect((await runCli(['sync', dir, '--once'], a.env('laptop'))).code).toBe(0);
});
