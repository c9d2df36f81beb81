import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { cliAccount, tempDir } from './cli.support';

/**
 * clients/src/sdk/tus.ts, `beforeCommit`: a tus upload streams all but its last MiB, awaits the
 * caller's check, and only then sends the PATCH that commits it; a check that throws ends the upload
 * on the service, so nothing of it is kept. The watching command checks there that a fresh large
 * file held still (clients/src/cli/context.ts, `firstLook`).
 */
let stack: TestStack;
let api: FilesyncClient;
let dir: string;
const MiB = 1024 * 1024;

beforeAll(async () => {
  stack = await startStack();
  ({ api } = await cliAccount(stack, 'hold'));
  dir = await tempDir('commit-hold');
});

afterAll(async () => {
  await stack.close();
});

/** The offset the service holds for a tus upload, or its status when it holds none. */
async function offsetOf(url: string): Promise<number | string> {
  const res = await fetch(url, { method: 'HEAD', headers: { authorization: `Bearer ${api.token}`, 'tus-resumable': '1.0.0' } });
  return res.ok ? Number(res.headers.get('upload-offset')) : `status ${res.status}`;
}

/** How many of this process's descriptors are open on `file`. */
async function openDescriptorsOf(file: string): Promise<number> {
  let n = 0;
  for (const fd of await fs.readdir('/proc/self/fd')) {
    const target = await fs.readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target === file) n++;
  }
  return n;
}

async function sample(name: string, size: number): Promise<{ file: string; bytes: Buffer }> {
  const bytes = randomBytes(size);
  const file = path.join(dir, name);
  await fs.writeFile(file, bytes);
  return { file, bytes };
}

test('the check runs once the service holds all but the last MiB, and the upload commits after it', async () => {
  const { file, bytes } = await sample('held.bin', 10 * MiB + 123);
  let url = '';
  const seen: Array<number | string> = [];
  const uploaded = await api.uploadResumable({
    path: file,
    size: bytes.length,
    metadata: { name: 'held.bin' },
    onUploadUrl: (u) => (url = u),
    beforeCommit: async () => {
      seen.push(await offsetOf(url));
    },
  });
  expect(seen).toEqual([bytes.length - MiB]);
  expect(uploaded.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  expect(uploaded.size).toBe(bytes.length);
});

test('a check that throws fails the upload with its error and leaves nothing on the service', async () => {
  const { file, bytes } = await sample('moved.bin', 9 * MiB);
  let url = '';
  const moved = new Error('the file moved');
  let checks = 0;
  await expect(
    api.uploadResumable({
      path: file,
      size: bytes.length,
      metadata: { name: 'moved.bin' },
      onUploadUrl: (u) => (url = u),
      beforeCommit: async () => {
        checks++;
        throw moved;
      },
    }),
  ).rejects.toBe(moved);
  // Not retried: the check ran once.
  expect(checks).toBe(1);
  // The piece held back was never read: its descriptor is closed all the same.
  await new Promise((r) => setTimeout(r, 50));
  expect(await openDescriptorsOf(file)).toBe(0);
  // The upload is ended on the service (its DELETE is sent as the upload fails).
  const deadline = Date.now() + 5000;
  let held = await offsetOf(url);
  while (typeof held === 'number' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    held = await offsetOf(url);
  }
  expect(held).toBe('status 404');
  const names = (await api.listFiles({ limit: 1000 })).items.map((f) => f.name);
  expect(names).not.toContain('moved.bin');
});

test('without a check, the file arrives whole, read in pieces its size is no multiple of', async () => {
  const { file, bytes } = await sample('whole.bin', 9 * MiB + 7);
  let url = '';
  const uploaded = await api.uploadResumable({ path: file, size: bytes.length, metadata: { name: 'whole.bin' }, onUploadUrl: (u) => (url = u) });
  expect(url).not.toBe('');
  expect(uploaded.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
});
