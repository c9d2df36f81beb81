import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { readTree, requestProxy, runCli, serverTree, sorted, tempDir } from './cli.support';

let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack.close();
});

interface Account {
  env: (deviceName: string) => Record<string, string>;
  api: FilesyncClient;
}

async function account(): Promise<Account> {
  const username = `cli${randomBytes(4).toString('hex')}`;
  const password = 'cli-password-1';
  await stack.admin.post('/v1/users', { username, password });
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password, deviceId: (await api.registerDevice({ name: 'api' })).id });
  return {
    api,
    env: (deviceName) => ({ FILESYNC_SERVER: stack.gateway.baseUrl, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: password, FILESYNC_DEVICE_NAME: deviceName }),
  };
}

const once = async (dir: string, env: Record<string, string>, extra: string[] = []) => {
  const res = await runCli(['sync', dir, '--once', ...extra], env);
  return res;
};

describe('the command line', () => {
  test('an unknown option, a missing folder or a file given as DIR is a usage error (2), and DIR is never created', async () => {
    const a = await account();
    const missing = path.join(await tempDir('cli-missing'), 'nope');
    expect((await runCli(['sync', missing, '--once'], a.env('x'))).code).toBe(2);
    expect(existsSync(missing)).toBe(false);
    const dir = await tempDir('cli-usage');
    expect((await runCli(['sync', dir, '--bogus'], a.env('x'))).code).toBe(2);
    await fs.writeFile(path.join(dir, 'f'), 'x');
    expect((await runCli(['sync', path.join(dir, 'f'), '--once'], a.env('x'))).code).toBe(2);
    expect((await runCli(['frobnicate', dir], a.env('x'))).code).toBe(2);
  });

  test('every command answers --help with exit 0', async () => {
    for (const args of [['--help'], ['sync', '--help'], ['status', '--help']]) {
      const res = await runCli(args, {});
      expect(res.code).toBe(0);
      expect(res.stdout).toContain('Usage: filesync');
    }
  });

  test('--version prints the version of the client package and exits 0', async () => {
    const { version } = JSON.parse(await fs.readFile(path.join(__dirname, '../../clients/package.json'), 'utf8')) as { version: string };
    const res = await runCli(['--version'], {});
    expect(res.code).toBe(0);
    expect(res.stdout.trim()).toBe(version);
  });

  test('a wrong password exits 3, an unreachable server exits 4', async () => {
    const a = await account();
    const dir = await tempDir('cli-auth');
    expect((await runCli(['sync', dir, '--once'], { ...a.env('x'), FILESYNC_PASSWORD: 'wrong-password' })).code).toBe(3);
    const other = await tempDir('cli-down');
    expect((await runCli(['sync', other, '--once', '--server', 'http://127.0.0.1:9'], a.env('x'))).code).toBe(4);
  });
});

describe('sync --once', () => {
  test('two devices converge, and a second run in a row transfers nothing', async () => {
    const a = await account();
    const [one, two] = [await tempDir('cli-one'), await tempDir('cli-two')];
    await fs.mkdir(path.join(one, 'docs'));
    await fs.writeFile(path.join(one, 'docs', 'report.txt'), 'report');
    await fs.writeFile(path.join(one, 'hello.txt'), 'hello');
    const first = await once(one, a.env('laptop'));
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('uploaded docs/report.txt');
    expect((await once(two, a.env('desktop'))).code).toBe(0);
    expect(sorted(await readTree(two))).toEqual(sorted(await readTree(one)));
    expect(sorted(await serverTree(a.api))).toEqual(sorted(await readTree(one)));
    const again = await once(one, a.env('laptop'));
    expect(again.code).toBe(0);
    expect(again.stdout).toBe('');
  });

  test('a downloaded file written again at once, to bytes of the same size, is sent on the next run', async () => {
    const a = await account();
    const [one, two] = [await tempDir('cli-one'), await tempDir('cli-two')];
    await fs.writeFile(path.join(one, 'notes.txt'), 'first');
    expect((await once(one, a.env('laptop'))).code).toBe(0);
    expect((await once(two, a.env('desktop'))).code).toBe(0);
    // Within a second of the download: the size stays, only the write's own mtime tells it apart.
    await fs.writeFile(path.join(two, 'notes.txt'), 'again');
    const sent = await once(two, a.env('desktop'));
    expect(sent.code).toBe(0);
    expect(sent.stdout).toContain('uploaded notes.txt');
    expect((await serverTree(a.api)).get('notes.txt')).toEqual((await readTree(two)).get('notes.txt'));
  });

  test('a local rename of a folder is sent as a rename: the resource keeps its id', async () => {
    const a = await account();
    const dir = await tempDir('cli-rename');
    await fs.mkdir(path.join(dir, 'old'));
    await fs.writeFile(path.join(dir, 'old', 'f.txt'), 'f');
    await once(dir, a.env('laptop'));
    const before = (await a.api.listFolders()).items.find((f) => f.name === 'old')!;
    await fs.rename(path.join(dir, 'old'), path.join(dir, 'new'));
    const res = await once(dir, a.env('laptop'));
    expect(res.stdout).toContain('renamed old -> new');
    expect(res.stdout).not.toContain('uploaded');
    const after = (await a.api.listFolders()).items.find((f) => f.name === 'new')!;
    expect(after.id).toBe(before.id);
  });

  test('the same file edited on two devices keeps both, the second as a conflicted copy named after its device', async () => {
    const a = await account();
    const [one, two] = [await tempDir('cli-c1'), await tempDir('cli-c2')];
    await fs.writeFile(path.join(one, 'report.txt'), 'base');
    await once(one, a.env('laptop'));
    await once(two, a.env('desktop'));
    await fs.writeFile(path.join(one, 'report.txt'), 'from laptop');
    await fs.writeFile(path.join(two, 'report.txt'), 'from desktop');
    await once(one, a.env('laptop'));
    const res = await once(two, a.env('desktop'));
    expect(res.stdout).toMatch(/conflict: kept report\.txt as report \(conflicted copy desktop \d{4}-\d\d-\d\d \d{6}\)\.txt/);
    await once(one, a.env('laptop'));
    const names = (await fs.readdir(one)).filter((n) => n !== '.filesync').sort();
    expect(names).toHaveLength(2);
    expect(await fs.readFile(path.join(one, 'report.txt'), 'utf8')).toBe('from laptop');
    expect(await fs.readFile(path.join(one, names.find((n) => n.includes('conflicted'))!), 'utf8')).toBe('from desktop');
  });

  test('an edit wins over a delete', async () => {
    const a = await account();
    const [one, two] = [await tempDir('cli-e1'), await tempDir('cli-e2')];
    await fs.writeFile(path.join(one, 'f.txt'), 'v1');
    await once(one, a.env('one'));
    await once(two, a.env('two'));
    await fs.rm(path.join(one, 'f.txt'));
    await fs.writeFile(path.join(two, 'f.txt'), 'v2');
    await once(one, a.env('one'));
    await once(two, a.env('two'));
    await once(one, a.env('one'));
    expect(await fs.readFile(path.join(one, 'f.txt'), 'utf8')).toBe('v2');
  });

  test('the deletion guard stops a pass that would delete most files, unless --force', async () => {
    const a = await account();
    const dir = await tempDir('cli-guard');
    for (let i = 0; i < 12; i++) await fs.writeFile(path.join(dir, `f${i}.txt`), `${i}`);
    await once(dir, a.env('one'));
    for (let i = 0; i < 12; i++) await fs.rm(path.join(dir, `f${i}.txt`));
    const stopped = await once(dir, a.env('one'));
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toContain('deletion guard');
    expect((await a.api.listFiles()).total).toBe(12);
    expect((await once(dir, a.env('one'), ['--force'])).code).toBe(0);
    expect((await a.api.listFiles()).total).toBe(0);
  });

  test('names in .filesyncignore are neither uploaded nor deleted, and the ignore file stays local', async () => {
    const a = await account();
    const dir = await tempDir('cli-ignore');
    await fs.writeFile(path.join(dir, '.filesyncignore'), '*.tmp\nbuild/\n');
    await fs.writeFile(path.join(dir, 'keep.txt'), 'k');
    await fs.writeFile(path.join(dir, 'scratch.tmp'), 's');
    await fs.mkdir(path.join(dir, 'build'));
    await fs.writeFile(path.join(dir, 'build', 'out.o'), 'o');
    await once(dir, a.env('one'));
    expect([...(await serverTree(a.api)).keys()]).toEqual(['keep.txt']);
    expect(existsSync(path.join(dir, 'scratch.tmp'))).toBe(true);
    // A synced file that becomes ignored is no longer deleted on the server when it goes locally.
    await fs.appendFile(path.join(dir, '.filesyncignore'), 'keep.txt\n');
    await fs.rm(path.join(dir, 'keep.txt'));
    expect((await once(dir, a.env('one'))).code).toBe(0);
    expect([...(await serverTree(a.api)).keys()]).toEqual(['keep.txt']);
  });

  test('a name the service refuses is reported and skipped, and the rest is synced (exit 0)', async () => {
    const a = await account();
    const dir = await tempDir('cli-names');
    await fs.writeFile(path.join(dir, 'bad\u0001name.txt'), 'x');
    await fs.writeFile(path.join(dir, 'good.txt'), 'y');
    const res = await once(dir, a.env('one'));
    expect(res.code).toBe(0);
    expect(res.stderr).toContain('bad');
    expect([...(await serverTree(a.api)).keys()]).toEqual(['good.txt']);
    expect(existsSync(path.join(dir, 'bad\u0001name.txt'))).toBe(true);
  });

  test('two local names equal after NFC are both kept, the second as a conflicted copy', async () => {
    const a = await account();
    const dir = await tempDir('cli-nfc');
    await fs.writeFile(path.join(dir, 'caf\u00e9.txt'), 'composed');
    await fs.writeFile(path.join(dir, 'cafe\u0301.txt'), 'decomposed');
    expect((await once(dir, a.env('one'))).code).toBe(0);
    const server = await serverTree(a.api);
    expect(server.size).toBe(2);
    expect(server.has('caf\u00e9.txt')).toBe(true);
  });

  test('status shows pending work, the last sync and the conflicted copies', async () => {
    const a = await account();
    const dir = await tempDir('cli-status');
    await fs.writeFile(path.join(dir, 'a.txt'), 'a');
    await once(dir, a.env('one'));
    await fs.writeFile(path.join(dir, 'b.txt'), 'b');
    const res = await runCli(['status', dir], a.env('one'));
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('pending: 0 ops, 1 uploads');
    expect(res.stdout).toMatch(/last sync: \d{4}-/);
    expect(res.stdout).toContain('conflicted copies: 0');
    expect(res.stdout).toMatch(/usage: /);
  });

  test('a download killed midway leaves no half-written file under its real name, and the next run completes it', async () => {
    const a = await account();
    const big = Buffer.alloc(20 * 1024 * 1024, 'z');
    await a.api.uploadFile({ content: big, name: 'big.bin' });
    const dir = await tempDir('cli-kill');
    await runCli(['sync', dir, '--once'], a.env('one'), { killAfterMs: 900 });
    if (existsSync(path.join(dir, 'big.bin'))) expect((await fs.stat(path.join(dir, 'big.bin'))).size).toBe(big.length);
    expect((await once(dir, a.env('one'))).code).toBe(0);
    expect((await fs.stat(path.join(dir, 'big.bin'))).size).toBe(big.length);
  });
});

describe('sync (watching)', () => {
  test('a change from another device costs one pass: one read of the feed, then the long poll again', async () => {
    const a = await account();
    const dir = await tempDir('cli-watch-pass');
    const { spawn } = await import('node:child_process');
    const { CLI } = await import('./cli.support');
    // The requests of the watching device, seen by a proxy in front of the gateway.
    const seen: string[] = [];
    const proxy = await requestProxy(stack.gateway.baseUrl, (line) => seen.push(line));
    const child = spawn(process.execPath, [CLI, 'sync', dir], { env: { ...process.env, ...a.env('watcher'), FILESYNC_SERVER: proxy.url }, stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const isPoll = (line: string) => line.startsWith('GET /v1/sync/changes') && /[?&]wait=[1-9]/.test(line);
    const reads = () => seen.filter((line) => line.startsWith('GET /v1/sync/changes') && !isPoll(line));
    try {
      const parked = Date.now() + 30_000;
      // Idle: the first passes are over (nothing asked for a second) and the poll is parked.
      for (let quiet = 0, count = -1; Date.now() < parked && quiet < 10; ) {
        await new Promise((r) => setTimeout(r, 100));
        quiet = seen.length === count && seen.some(isPoll) ? quiet + 1 : 0;
        count = seen.length;
      }
      seen.length = 0;
      await a.api.uploadFile({ content: Buffer.from('from elsewhere'), name: 'remote.txt' });
      const until = Date.now() + 30_000;
      while (Date.now() < until && !existsSync(path.join(dir, 'remote.txt'))) await new Promise((r) => setTimeout(r, 100));
      expect(await fs.readFile(path.join(dir, 'remote.txt'), 'utf8')).toBe('from elsewhere');
      // Time for a pass that would follow at once; the next poll is parked again.
      await new Promise((r) => setTimeout(r, 1500));
      expect(reads()).toHaveLength(1);
      expect(seen.filter(isPoll).length).toBeGreaterThanOrEqual(1);
    } finally {
      child.kill('SIGTERM');
      await proxy.close();
    }
    expect(await exited).toBe(0);
  });

  test('files brought down while watching are known to its next push: none goes back up, and an edit replaces its own file', async () => {
    const a = await account();
    const dir = await tempDir('cli-watch-landed');
    const { spawn } = await import('node:child_process');
    const { CLI, sha256 } = await import('./cli.support');
    const { bulkUpload } = await import('../../clients/src/sdk/bulk');
    const seen: string[] = [];
    const proxy = await requestProxy(stack.gateway.baseUrl, (line) => seen.push(line));
    const child = spawn(process.execPath, [CLI, 'sync', dir], { env: { ...process.env, ...a.env('watcher'), FILESYNC_SERVER: proxy.url }, stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // What the watching device sends beyond reading and signing in.
    const sent = () => seen.filter((line) => !/^(GET|HEAD) /.test(line) && !line.startsWith('POST /v1/files/bulk/content') && !/^POST \/v1\/(auth|devices)/.test(line));
    try {
      await new Promise((r) => setTimeout(r, 1500));
      // Enough files for one bulk response, placed by one pass.
      const files = Array.from({ length: 24 }, (_, i) => ({ header: { name: `note${i}.txt` }, content: Buffer.from(`note ${i} `.repeat(i + 1)) }));
      await bulkUpload(a.api, files);
      const want = await serverTree(a.api);
      expect(want.size).toBe(24);
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && (await readTree(dir)).size < 24) await new Promise((r) => setTimeout(r, 100));
      expect(sorted(await readTree(dir))).toEqual(sorted(want));
      // Time for any pass that would follow: the device found nothing of its own to send.
      await new Promise((r) => setTimeout(r, 1500));
      expect(sent()).toEqual([]);
      await fs.writeFile(path.join(dir, 'note3.txt'), 'edited where it landed');
      want.set('note3.txt', sha256('edited where it landed'));
      const until = Date.now() + 30_000;
      while (Date.now() < until && (await serverTree(a.api)).get('note3.txt') !== want.get('note3.txt')) await new Promise((r) => setTimeout(r, 200));
      expect(sorted(await serverTree(a.api))).toEqual(sorted(want));
    } finally {
      child.kill('SIGTERM');
      await proxy.close();
    }
    expect(await exited).toBe(0);
  });

  test('a file written while its device\'s own last change comes back through the feed is sent too', async () => {
    const a = await account();
    const dir = await tempDir('cli-watch-echo');
    const { spawn } = await import('node:child_process');
    const { CLI, sha256 } = await import('./cli.support');
    const child = spawn(process.execPath, [CLI, 'sync', dir], { env: { ...process.env, ...a.env('watcher') }, stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const until = async (check: (tree: Map<string, string | null>) => boolean) => {
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && !check(await serverTree(a.api))) await new Promise((r) => setTimeout(r, 20));
      return serverTree(a.api);
    };
    try {
      await new Promise((r) => setTimeout(r, 1500));
      for (let round = 0; round < 3; round++) {
        await fs.writeFile(path.join(dir, `first${round}.txt`), `first ${round}`);
        // The moment the service holds it, its change is on its way back to the device that sent it.
        await until((tree) => tree.has(`first${round}.txt`));
        await fs.writeFile(path.join(dir, `second${round}.txt`), `second ${round}`);
        const tree = await until((t) => t.has(`second${round}.txt`));
        expect(tree.get(`second${round}.txt`)).toBe(sha256(`second ${round}`));
      }
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  test('a file written while it runs reaches the server, and SIGTERM stops it with exit 0', async () => {
    const a = await account();
    const dir = await tempDir('cli-watch');
    const { spawn } = await import('node:child_process');
    const { CLI } = await import('./cli.support');
    const child = spawn(process.execPath, [CLI, 'sync', dir], { env: { ...process.env, ...a.env('watcher') }, stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await new Promise((r) => setTimeout(r, 1500));
      await fs.writeFile(path.join(dir, 'live.txt'), 'live');
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && !(await serverTree(a.api)).has('live.txt')) await new Promise((r) => setTimeout(r, 300));
      expect((await serverTree(a.api)).has('live.txt')).toBe(true);
      await a.api.uploadFile({ content: Buffer.from('remote'), name: 'remote.txt' });
      const until = Date.now() + 30_000;
      while (Date.now() < until && !existsSync(path.join(dir, 'remote.txt'))) await new Promise((r) => setTimeout(r, 300));
      expect(await fs.readFile(path.join(dir, 'remote.txt'), 'utf8')).toBe('remote');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
