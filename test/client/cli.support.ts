import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import type { TestStack } from '../support/stack';

/**
 * The command as `npx filesync` runs it (built by `npm run build`, which `npm test` runs first), or
 * the build FILESYNC_CLI names (to run these tests against another build of the client).
 */
export const CLI = process.env.FILESYNC_CLI ?? path.join(__dirname, '../../clients/bin/filesync.js');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `filesync ...args`; with `killAfterMs` it is SIGKILLed then (if still running). `started`
 * receives the process, for a test that kills it when something it watches happens.
 */
export function runCli(
  args: string[],
  env: Record<string, string>,
  options: { killAfterMs?: number; timeoutMs?: number; started?: (child: ChildProcess) => void } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    options.started?.(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const kill = options.killAfterMs !== undefined ? setTimeout(() => child.kill('SIGKILL'), options.killAfterMs) : undefined;
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`filesync ${args.join(' ')} did not finish in time\n${stdout}\n${stderr}`));
    }, options.timeoutMs ?? 90_000);
    child.on('exit', (code, signal) => {
      clearTimeout(kill);
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

export const tempDir = (prefix: string) => fs.mkdtemp(path.join(os.tmpdir(), `${prefix}-`));

/** A folder's tree: NFC path -> sha256 of a file, or null for a folder; the state folder and ignore file left out. */
export async function readTree(dir: string): Promise<Map<string, string | null>> {
  const tree = new Map<string, string | null>();
  const walk = async (rel: string) => {
    for (const name of await fs.readdir(path.join(dir, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      if (r === '.filesync' || r === '.filesyncignore') continue;
      const st = await fs.lstat(path.join(dir, r));
      if (st.isDirectory()) {
        tree.set(r.normalize('NFC'), null);
        await walk(r);
      } else tree.set(r.normalize('NFC'), sha256(await fs.readFile(path.join(dir, r))));
    }
  };
  await walk('');
  return tree;
}

/** The user's tree on the service, read from the change feed from its start. */
export async function serverTree(client: FilesyncClient): Promise<Map<string, string | null>> {
  const nodes = new Map<string, { parentId: string; name: string; type: string; sha256?: string }>();
  let cursor: string | undefined;
  for (;;) {
    const page = await client.changes({ cursor, limit: 1000 });
    for (const c of page.items) {
      if (c.deleted) nodes.delete(c.id);
      else nodes.set(c.id, c);
    }
    cursor = page.cursor;
    if (!page.hasMore) break;
  }
  const pathOf = (id: string): string => {
    const n = nodes.get(id)!;
    return n.parentId ? `${pathOf(n.parentId)}/${n.name}` : n.name;
  };
  const tree = new Map<string, string | null>();
  for (const [id, n] of nodes) // A file without content (created by a sync op) holds no bytes: it equals an empty file.
    tree.set(pathOf(id), n.type === 'folder' ? null : n.sha256 ?? sha256(''));
  return tree;
}

export const sorted = (tree: Map<string, string | null>) => [...tree.entries()].sort(([a], [b]) => (a < b ? -1 : 1));

/** A small seeded generator (mulberry32): the same seed gives the same history. */
export function seeded(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    chance: (p: number) => next() < p,
  };
}

/** A new account on the stack, signed in through the SDK, and the environment that runs the command as one of its devices. */
export async function cliAccount(stack: TestStack, prefix: string) {
  const username = `${prefix}${randomBytes(4).toString('hex')}`;
  const password = `${prefix}-password-1`;
  await stack.admin.post('/v1/users', { username, password });
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password, deviceId: (await api.registerDevice({ name: 'api' })).id });
  const env = (device: string) => ({ FILESYNC_SERVER: stack.gateway.baseUrl, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: password, FILESYNC_DEVICE_NAME: device });
  return { api, env };
}

/** `sync DIR --once`, which must end in sync (exit 0) and print nothing on stderr. */
export async function syncOnceOk(dir: string, env: Record<string, string>): Promise<CliResult> {
  const res = await runCli(['sync', dir, '--once'], env);
  expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: '' });
  return res;
}

/**
 * A proxy in front of `target` that passes every request on untouched and tells `seen` of each
 * (`GET /v1/...?query`), for tests that count what a device asks for. Closed with `close()`.
 */
export async function requestProxy(target: string, seen: (line: string) => void): Promise<{ url: string; close: () => Promise<void> }> {
  const http = await import('node:http');
  const to = new URL(target);
  const server = http.createServer((req, res) => {
    seen(`${req.method} ${req.url}`);
    const upstream = http.request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as import('node:net').AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
