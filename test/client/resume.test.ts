import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Transform } from 'node:stream';
import { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { runCli, serverTree, sha256, tempDir } from './cli.support';

/**
 * docs/CLIENT.md guarantee 4 for uploads: a CLI SIGKILLed in the middle of a tus upload over 8 MiB
 * resumes it on its next run. A forwarding proxy in front of the real gateway counts the PATCH
 * bytes it passes on, and in the first run holds the body once half the file has gone through, so
 * the kill always lands in the middle of the transfer (when the proxy says so, not after a delay).
 */
let stack: TestStack;
let proxy: http.Server;
let proxyUrl: string;
/** PATCH body bytes the proxy passed on to the gateway. */
let patched = 0;
/** The tus uploads created through the proxy, with the token that created them. */
const created: { url: string; authorization: string }[] = [];
/** Where the proxy holds PATCH bodies: at `at` bytes passed on, it calls `reached` and passes nothing more until it is released. */
let hold: { at: number; reached: (release: () => void) => void } | undefined;

beforeAll(async () => {
  stack = await startStack();
  const target = new URL(stack.gateway.baseUrl);
  proxy = http.createServer((req, res) => {
    const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent: false }, (up) => {
      if (req.method === 'POST' && req.url === '/v1/uploads' && up.headers.location) {
        created.push({ url: new URL(up.headers.location, stack.gateway.baseUrl).href, authorization: req.headers.authorization ?? '' });
      }
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    // The client killed: the gateway sees its PATCH cut short, as it would without the proxy.
    req.on('close', () => {
      if (!req.complete) upstream.destroy();
    });
    if (req.method !== 'PATCH') {
      req.pipe(upstream);
      return;
    }
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        const pass = () => {
          patched += chunk.length;
          done(null, chunk);
        };
        if (hold && patched >= hold.at) {
          // Held: until `done` is called, nothing more of this body is read or passed on.
          const held = hold;
          hold = undefined;
          held.reached(pass);
          return;
        }
        pass();
      },
    });
    req.pipe(counter).pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await stack.close();
});

async function uploadOffset(upload: { url: string; authorization: string }): Promise<number> {
  const res = await fetch(upload.url, { method: 'HEAD', headers: { authorization: upload.authorization, 'tus-resumable': '1.0.0' } });
  expect(res.status).toBe(200);
  return Number(res.headers.get('upload-offset'));
}

interface Account {
  env: Record<string, string>;
  api: FilesyncClient;
}

async function account(): Promise<Account> {
  const username = `resume${randomBytes(4).toString('hex')}`;
  await stack.admin.post('/v1/users', { username, password: 'resume-password-1' });
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password: 'resume-password-1', deviceId: (await api.registerDevice({ name: 'api' })).id });
  return { api, env: { FILESYNC_SERVER: proxyUrl, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: 'resume-password-1', FILESYNC_DEVICE_NAME: 'laptop' } };
}

const SIZE = 12 * 1024 * 1024;

/**
 * Runs `sync --once` until the proxy has passed on half of `size` in PATCH bodies, kills it there,
 * and answers the upload it created, how many bytes the service holds of it, and the bytes passed on.
 */
async function killMidUpload(dir: string, env: Record<string, string>, size: number) {
  const uploadsBefore = created.length;
  const patchedBefore = patched;
  const killed = await runCli(['sync', dir, '--once'], env, {
    started: (child) => {
      hold = { at: patchedBefore + size / 2, reached: () => child.kill('SIGKILL') };
    },
  });
  hold = undefined;
  expect(killed.signal).toBe('SIGKILL');
  expect(created).toHaveLength(uploadsBefore + 1);
  const upload = created[created.length - 1]!;
  const sent = patched - patchedBefore;
  expect(sent).toBeGreaterThanOrEqual(size / 2);
  expect(sent).toBeLessThan(size);
  // What the service kept of the killed run is what the next one must not send again.
  const offset = await uploadOffset(upload);
  expect(offset).toBeGreaterThan(0);
  expect(offset).toBeLessThanOrEqual(sent);
  return { upload, offset, sent };
}

async function contentOf(api: FilesyncClient, name: string): Promise<string> {
  const page = await api.changes({ limit: 100 });
  const item = page.items.filter((i) => i.name === name && !i.deleted).pop()!;
  return sha256(Buffer.from(await (await api.download(item.id)).arrayBuffer()));
}

test('a new file over 8 MiB killed midway resumes from the offset the service holds on the next run', async () => {
  const a = await account();
  const dir = await tempDir('cli-resume');
  const content = randomBytes(SIZE);
  await fs.writeFile(path.join(dir, 'big.bin'), content);
  const uploads = created.length;
  const { offset, sent } = await killMidUpload(dir, a.env, SIZE);

  const before = patched;
  const resumed = await runCli(['sync', dir, '--once'], a.env);
  expect(resumed.code).toBe(0);
  expect(resumed.stdout).toContain('uploaded big.bin');
  // Continued, not started over: no second upload, and only the bytes past the offset were sent.
  expect(created).toHaveLength(uploads + 1);
  expect(patched - before).toBe(SIZE - offset);
  expect(sent + patched - before).toBeLessThan(SIZE * 1.5);

  expect([...(await serverTree(a.api)).entries()]).toEqual([['big.bin', sha256(content)]]);
  expect(await contentOf(a.api, 'big.bin')).toBe(sha256(content));
});

test('new content over 8 MiB for a synced file, killed midway, resumes too', async () => {
  const a = await account();
  const dir = await tempDir('cli-resume-edit');
  await fs.writeFile(path.join(dir, 'big.bin'), randomBytes(SIZE));
  expect((await runCli(['sync', dir, '--once'], a.env)).code).toBe(0);
  const edited = randomBytes(SIZE);
  await fs.writeFile(path.join(dir, 'big.bin'), edited);
  const uploads = created.length;
  const { offset } = await killMidUpload(dir, a.env, SIZE);

  const before = patched;
  const resumed = await runCli(['sync', dir, '--once'], a.env);
  expect(resumed.code).toBe(0);
  expect(resumed.stdout).toContain('uploaded big.bin');
  expect(created).toHaveLength(uploads + 1);
  expect(patched - before).toBe(SIZE - offset);
  expect([...(await serverTree(a.api)).entries()]).toEqual([['big.bin', sha256(edited)]]);
  expect(await contentOf(a.api, 'big.bin')).toBe(sha256(edited));
});

test('a killed upload for content that became a conflicted copy meanwhile is terminated, and both versions are kept', async () => {
  const a = await account();
  const dir = await tempDir('cli-resume-base');
  await fs.writeFile(path.join(dir, 'big.bin'), randomBytes(SIZE));
  expect((await runCli(['sync', dir, '--once'], a.env)).code).toBe(0);
  const mine = randomBytes(SIZE);
  await fs.writeFile(path.join(dir, 'big.bin'), mine);
  const { upload } = await killMidUpload(dir, a.env, SIZE);

  // Another device replaces the content while this one is down: the next pull finds both edited.
  const id = (await a.api.changes({ limit: 100 })).items.find((i) => i.name === 'big.bin')!.id;
  const theirs = Buffer.from('their version');
  await a.api.replaceContent(id, { content: theirs });

  const next = await runCli(['sync', dir, '--once'], a.env);
  expect(next.code).toBe(0);
  expect(next.stdout).toMatch(/conflict: kept big\.bin as big \(conflicted copy laptop \d{4}-\d\d-\d\d \d{6}\)\.bin/);
  const tree = await serverTree(a.api);
  expect(tree.get('big.bin')).toBe(sha256(theirs));
  expect([...tree.entries()].filter(([p]) => p.startsWith('big (conflicted copy laptop '))).toEqual([[expect.any(String), sha256(mine)]]);
  // The half-sent upload serves nothing now: it is gone from the service and from the journal.
  const head = await fetch(upload.url, { method: 'HEAD', headers: { authorization: upload.authorization, 'tus-resumable': '1.0.0' } });
  expect(head.status).toBe(404);
  expect((await a.api.usage()).uploadsBytes).toBe(0);
  expect((await runCli(['status', dir], a.env)).stdout).toContain('pending: 0 ops, 0 uploads, 0 downloads');
});

test('a resumed upload whose base the server replaced before its last byte is refused by If-Match, and both versions are kept', async () => {
  const a = await account();
  const dir = await tempDir('cli-resume-match');
  await fs.writeFile(path.join(dir, 'big.bin'), randomBytes(SIZE));
  expect((await runCli(['sync', dir, '--once'], a.env)).code).toBe(0);
  const mine = randomBytes(SIZE);
  await fs.writeFile(path.join(dir, 'big.bin'), mine);
  await killMidUpload(dir, a.env, SIZE);

  // The resumed PATCH is held at its first byte while another device replaces the content.
  const id = (await a.api.changes({ limit: 100 })).items.find((i) => i.name === 'big.bin')!.id;
  const theirs = Buffer.from('their version');
  hold = {
    at: patched,
    reached: (release) => {
      void a.api.replaceContent(id, { content: theirs }).then(release, release);
    },
  };
  const next = await runCli(['sync', dir, '--once'], a.env);
  hold = undefined;
  expect(next.code).toBe(0);
  expect(next.stdout).toMatch(/conflict: kept big\.bin as big \(conflicted copy laptop \d{4}-\d\d-\d\d \d{6}\)\.bin/);
  const tree = await serverTree(a.api);
  expect(tree.get('big.bin')).toBe(sha256(theirs));
  expect([...tree.entries()].filter(([p]) => p.startsWith('big (conflicted copy laptop '))).toEqual([[expect.any(String), sha256(mine)]]);
  expect((await a.api.usage()).uploadsBytes).toBe(0);
});
