import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { startStack, type TestStack } from '../support/stack';
import { CLI, cliAccount, requestProxy, sha256, tempDir } from './cli.support';

/**
 * docs/CLIENT.md, files still being written: a watching device whose large new file is written in
 * pieces with pauses (each shorter than the two looks' distance) sends it once, whole, and leaves no
 * upload of a part of it on the service: any upload begun while the file still moved was ended
 * (clients/src/sdk/tus.ts, `beforeCommit`; clients/src/cli/context.ts, `firstLook`).
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startStack();
});

afterAll(async () => {
  await stack.close();
});

const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a large file written with pauses is committed once, with its final bytes', async () => {
  const a = await cliAccount(stack, 'slow');
  const dir = await tempDir('slow-writer');
  const seen: string[] = [];
  const proxy = await requestProxy(stack.gateway.baseUrl, (line) => seen.push(line));
  const child = spawn(process.execPath, [CLI, 'sync', dir], { env: { ...process.env, ...a.env('watcher'), FILESYNC_SERVER: proxy.url }, stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const bytes = randomBytes(24 * MiB);
  /** The file `name` once the service holds the written bytes. */
  const settled = async (name: string) => {
    let file;
    for (const until = Date.now() + 60_000; Date.now() < until; await sleep(200)) {
      file = (await a.api.listFiles({ limit: 10 })).items.find((f) => f.name === name);
      if (file?.sha256 === sha256(bytes)) break;
    }
    expect(file?.sha256).toBe(sha256(bytes));
    // A pass that may still follow.
    await sleep(1500);
    return file!;
  };
  try {
    // Idle: its first pass, which sends what it finds as `--once` does, is over and its poll is parked.
    for (let quiet = 0, count = -1, until = Date.now() + 30_000; Date.now() < until && quiet < 10; ) {
      await sleep(100);
      quiet = seen.length === count && seen.some((l) => l.startsWith('GET /v1/sync/changes') && l.includes('wait=')) ? quiet + 1 : 0;
      count = seen.length;
    }
    // The premise holds only if no pause of the writer reached the two looks' distance (250 ms):
    // a host too busy to keep its pauses short writes the file again, under another name.
    let kept = false;
    for (let attempt = 0; attempt < 3 && !kept; attempt++) {
      seen.length = 0;
      const name = `export${attempt}.bin`;
      const handle = await fs.open(path.join(dir, name), 'w');
      // Measured between the writes' mtimes, as the kernel recorded them: a busy host may start a write
      // later than the writer asked for it.
      let longest = 0;
      let previous: number | undefined;
      for (let at = 0; at < bytes.length; at += 2 * MiB) {
        await handle.write(bytes, at, 2 * MiB, at);
        const { mtimeMs } = await handle.stat();
        if (previous !== undefined) longest = Math.max(longest, mtimeMs - previous);
        previous = mtimeMs;
        // Shorter than the two looks' distance (250 ms).
        await sleep(150);
      }
      await handle.close();
      const file = await settled(name);
      kept = longest < 230;
      if (!kept) continue;
      // One content, never a part of it.
      expect((await a.api.listVersions(file.id)).items).toEqual([]);
      // Every upload begun before the write ended was ended on the service; the last one committed.
      const creations = seen.filter((l) => l.startsWith('POST /v1/uploads')).length;
      const ended = seen.filter((l) => l.startsWith('DELETE /v1/uploads/')).length;
      expect(creations).toBe(ended + 1);
    }
    expect(kept).toBe(true);
  } finally {
    child.kill('SIGTERM');
    await proxy.close();
  }
  expect(await exited).toBe(0);
});
