import { promises as fs } from 'node:fs';
import path from 'node:path';
import { BULK_FILE_MAX } from '../../clients/src/cli/bulk.transfers';
import { firstLook, stillWriting, type SyncContext } from '../../clients/src/cli/context';
import { isRacy, type LocalEntry } from '../../clients/src/cli/scan';
import { tempDir } from './cli.support';

/**
 * clients/src/cli/context.ts, `stillWriting`: while watching, a file whose size or mtime moved since
 * the scan is left for the pass its last write brings, so no device ever receives a part of it.
 */
async function scanned(dir: string, name: string): Promise<LocalEntry> {
  const st = await fs.lstat(path.join(dir, name));
  return { path: name, disk: name, type: 'file', size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, racy: isRacy(st.mtimeMs, Date.now()) };
}

const contextOf = (dir: string, watching: boolean) => ({ dir, deferRacy: watching, recheckLater: false }) as unknown as SyncContext;

test('watching, a file that grew, changed or went since the scan is still being written; one that held still is not', async () => {
  const dir = await tempDir('still-writing');
  await fs.writeFile(path.join(dir, 'steady.bin'), Buffer.alloc(1000, 1));
  await fs.writeFile(path.join(dir, 'growing.bin'), Buffer.alloc(1000, 2));
  await fs.writeFile(path.join(dir, 'touched.bin'), Buffer.alloc(1000, 3));
  await fs.writeFile(path.join(dir, 'gone.bin'), Buffer.alloc(1000, 4));
  const entries = Object.fromEntries(await Promise.all(['steady', 'growing', 'touched', 'gone'].map(async (n) => [n, await scanned(dir, `${n}.bin`)] as const)));

  await fs.appendFile(path.join(dir, 'growing.bin'), Buffer.alloc(10, 2));
  // Same size, later mtime: bytes rewritten in place.
  const later = new Date(entries.touched!.mtimeMs + 5000);
  await fs.utimes(path.join(dir, 'touched.bin'), later, later);
  await fs.rm(path.join(dir, 'gone.bin'));

  const steady = contextOf(dir, true);
  expect(await stillWriting(steady, entries.steady!)).toBe(false);
  expect(steady.recheckLater).toBe(false);
  for (const name of ['growing', 'touched', 'gone'] as const) {
    const ctx = contextOf(dir, true);
    expect(await stillWriting(ctx, entries[name]!)).toBe(true);
    // A later pass looks again even if no event comes.
    expect(ctx.recheckLater).toBe(true);
  }
});

test('watching, a fresh large file is looked at twice a moment apart: a write that resumes in between is seen', async () => {
  const dir = await tempDir('still-writing-paused');
  // Above the size sent in bulk: large enough to be looked at twice.
  await fs.writeFile(path.join(dir, 'paused.bin'), Buffer.alloc(BULK_FILE_MAX + 1, 5));
  await fs.writeFile(path.join(dir, 'done.bin'), Buffer.alloc(BULK_FILE_MAX + 1, 6));
  await fs.writeFile(path.join(dir, 'small.bin'), Buffer.alloc(1000, 7));
  const paused = await scanned(dir, 'paused.bin');
  const done = await scanned(dir, 'done.bin');
  // The writer, held back at the first look, goes on 100 ms later.
  const resumed = new Promise((resolve) => setTimeout(() => resolve(fs.appendFile(path.join(dir, 'paused.bin'), Buffer.alloc(10, 5))), 100));
  const ctx = contextOf(dir, true);
  expect(await stillWriting(ctx, paused)).toBe(true);
  await resumed;
  // A small file: only the first look counts.
  const small = await scanned(dir, 'small.bin');
  const later = new Promise((resolve) => setTimeout(() => resolve(fs.appendFile(path.join(dir, 'small.bin'), Buffer.alloc(10, 7))), 100));
  expect(await stillWriting(contextOf(dir, true), small)).toBe(false);
  await later;
  const started = Date.now();
  expect(await stillWriting(contextOf(dir, true), done)).toBe(false);
  // Fresh and large: the second look came after the pause a throttled writer can take.
  expect(Date.now() - started).toBeGreaterThanOrEqual(240);
});

test('the looks go on while an upload runs: they answer whether the file held still since the first', async () => {
  const dir = await tempDir('still-writing-looks');
  await fs.writeFile(path.join(dir, 'held.bin'), Buffer.alloc(BULK_FILE_MAX + 1, 8));
  await fs.writeFile(path.join(dir, 'resumed.bin'), Buffer.alloc(BULK_FILE_MAX + 1, 9));
  const held = await scanned(dir, 'held.bin');
  const resumed = await scanned(dir, 'resumed.bin');

  const heldCtx = contextOf(dir, true);
  const started = Date.now();
  const heldLook = await firstLook(heldCtx, held);
  expect(heldLook.moving).toBe(false);
  // The upload runs meanwhile; the file counts as held still only SETTLE_MS after the first look.
  expect(await heldLook.settled).toBe(true);
  expect(Date.now() - started).toBeGreaterThanOrEqual(240);
  expect(heldCtx.recheckLater).toBe(false);

  const resumedCtx = contextOf(dir, true);
  const resumedLook = await firstLook(resumedCtx, resumed);
  expect(resumedLook.moving).toBe(false);
  await fs.appendFile(path.join(dir, 'resumed.bin'), Buffer.alloc(10, 9));
  expect(await resumedLook.settled).toBe(false);
  expect(resumedCtx.recheckLater).toBe(true);
});

test('sync --once sends what the scan found, moving or not', async () => {
  const dir = await tempDir('still-writing-once');
  await fs.writeFile(path.join(dir, 'growing.bin'), Buffer.alloc(1000, 2));
  const entry = await scanned(dir, 'growing.bin');
  await fs.appendFile(path.join(dir, 'growing.bin'), Buffer.alloc(10, 2));
  const ctx = contextOf(dir, false);
  expect(await stillWriting(ctx, entry)).toBe(false);
  expect(ctx.recheckLater).toBe(false);
});
