import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, promises as fs, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { Readable, Writable } from 'node:stream';
import { ContentNotFoundError, type ByteRange, type StagedContent } from '../../shared/storage/content.store';
import { PIECES_FILE, type CompositeManifest } from '../../shared/storage/local/composite';
import { COMPACT_AT, MIN_LINKED_COPY } from '../../shared/storage/local/composite.staging';
import { LocalContentStore } from '../../shared/storage/local/local.store';

/*
 * Delta content on the local driver (shared/storage/local/composite.ts): long copies of the base are
 * hard links to its files, the content reads the same through every read the driver has, and it is
 * removed, walked, swept and kept like any content.
 */

const MiB = 1024 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

type Step = { copy: ByteRange } | { data: Buffer };

/** Stages `steps` against `baseKey` as the delta assembly does: each copy announced before its bytes, which come from `base`. */
function stageSteps(store: LocalContentStore, baseKey: string, base: Buffer, steps: Step[]): Promise<StagedContent> {
  const staging = store.stageFromBase(baseKey, { maxBytes: 1024 * MiB });
  let position = 0;
  async function* bytes() {
    for (const s of steps) {
      if ('copy' in s) {
        staging.copying(position, s.copy);
        const piece = base.subarray(s.copy.start, s.copy.end + 1);
        // In pieces, as a stream delivers them.
        for (let at = 0; at < piece.length; at += 300_000) yield piece.subarray(at, at + 300_000);
        position += piece.length;
      } else {
        yield s.data;
        position += s.data.length;
      }
    }
  }
  return staging.stage(Readable.from(bytes()));
}

const expected = (base: Buffer, steps: Step[]) => Buffer.concat(steps.map((s) => ('copy' in s ? base.subarray(s.copy.start, s.copy.end + 1) : s.data)));

async function readAll(store: LocalContentStore, key: string, range?: ByteRange): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const p of await (await store.open(key)).read(range)) parts.push(p as Buffer);
  return Buffer.concat(parts);
}

describe('composite content on the local driver', () => {
  let root: string;
  let store: LocalContentStore;
  const base = randomBytes(6 * MiB);
  const edit = randomBytes(MiB);
  const steps: Step[] = [{ data: randomBytes(100) }, { copy: { start: 0, end: 3 * MiB - 1 } }, { data: edit }, { copy: { start: 4 * MiB, end: 6 * MiB - 1 } }];
  const target = expected(base, steps);

  beforeEach(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'composite-'));
    store = new LocalContentStore(root);
    await store.write('dev/base', base);
  });

  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  test('long copies are links to the base\'s file, only the new bytes are written, and every read gives the new content', async () => {
    const staged = await stageSteps(store, 'dev/base', base, steps);
    expect(staged).toMatchObject({ size: target.length, sha256: sha256(target) });
    await store.place(staged, 'dev/next');

    const dir = path.join(root, 'dev/next');
    const manifest = JSON.parse(await fs.readFile(path.join(dir, PIECES_FILE), 'utf8')) as CompositeManifest;
    expect(manifest.pieces.map((p) => p.length)).toEqual([100, 3 * MiB, MiB, 2 * MiB]);
    const files = (await fs.readdir(dir)).filter((f) => f !== PIECES_FILE).sort();
    expect(files).toHaveLength(2);
    // The link shares the base's inode; the new bytes' file holds only them.
    const linked = files.map((f) => statSync(path.join(dir, f)));
    expect(linked.some((s) => s.ino === statSync(path.join(root, 'dev/base')).ino)).toBe(true);
    expect(linked.some((s) => s.size === MiB + 100)).toBe(true);

    expect((await readAll(store, 'dev/next')).equals(target)).toBe(true);
    const across = { start: 3 * MiB - 10, end: 4 * MiB + 200 };
    expect((await readAll(store, 'dev/next', across)).equals(target.subarray(across.start, across.end + 1))).toBe(true);
    const handle = await store.open('dev/next');
    expect(handle.size).toBe(target.length);
    const buf = Buffer.alloc(2 * MiB);
    expect(await handle.readInto!(buf, 2 * MiB)).toBe(2 * MiB);
    expect(buf.equals(target.subarray(2 * MiB, 4 * MiB))).toBe(true);
    expect(await handle.readInto!(buf, target.length - 5)).toBe(5);
    await handle.close();
    const sink: Buffer[] = [];
    await (await store.open('dev/next')).writeTo!(new Writable({ write: (c: Buffer, _e, done) => (sink.push(Buffer.from(c)), done()) }), { start: 50, end: target.length - 1 });
    expect(Buffer.concat(sink).equals(target.subarray(50))).toBe(true);
    expect(await store.stat('dev/next')).toMatchObject({ key: 'dev/next', size: target.length });
  });

  test('a small composite reads whole like a small file, with its CRC-32', async () => {
    const small: Step[] = [{ copy: { start: MiB, end: MiB + MIN_LINKED_COPY + 9_999 } }, { data: randomBytes(10) }];
    const bytes = expected(base, small);
    await store.place(await stageSteps(store, 'dev/base', base, small), 'dev/small');
    const into = Buffer.from(new SharedArrayBuffer(bytes.length));
    const [got, missing] = await store.readWhole([
      { key: 'dev/small', into, crc32: true },
      { key: 'dev/none', into: Buffer.from(new SharedArrayBuffer(10)), crc32: false },
    ]);
    expect(got).toEqual({ size: bytes.length, read: bytes.length, crc32: crc32(bytes) });
    expect(into.equals(bytes)).toBe(true);
    expect(missing).toBeInstanceOf(ContentNotFoundError);
  });

  test('the content outlives its base, and is one key to walk and to remove', async () => {
    await store.place(await stageSteps(store, 'dev/base', base, steps), 'dev/next');
    const open = await store.open('dev/next');
    await store.remove('dev/base');
    expect((await readAll(store, 'dev/next')).equals(target)).toBe(true);

    const keys = [];
    for await (const o of store.walk()) keys.push(o);
    expect(keys.map((o) => [o.key, o.size])).toEqual([['dev/next', target.length]]);

    // Removed even with the staging folder gone (removed by hand), through which a removal moves it.
    await fs.rm(path.join(root, '.staging'), { recursive: true });
    await store.remove('dev/next');
    await expect(store.open('dev/next')).rejects.toBeInstanceOf(ContentNotFoundError);
    expect(await store.stat('dev/next')).toBeUndefined();
    // A handle opened before the removal still reads the bytes.
    const parts: Buffer[] = [];
    for await (const p of await open.read()) parts.push(p as Buffer);
    expect(Buffer.concat(parts).equals(target)).toBe(true);
    const left = [];
    for await (const o of store.walk()) left.push(o.key);
    expect(left).toEqual([]);
  });

  test('a delta of a composite links the files the composite holds, never the composite', async () => {
    await store.place(await stageSteps(store, 'dev/base', base, steps), 'dev/next');
    const again: Step[] = [{ copy: { start: MiB, end: target.length - 1 } }, { data: randomBytes(10) }];
    const third = expected(target, again);
    const staged = await stageSteps(store, 'dev/next', target, again);
    await store.place(staged, 'dev/third');
    await store.remove('dev/next');
    await store.remove('dev/base');
    expect((await readAll(store, 'dev/third')).equals(third)).toBe(true);
    const manifest = JSON.parse(await fs.readFile(path.join(root, 'dev/third', PIECES_FILE), 'utf8')) as CompositeManifest;
    expect(manifest.pieces.length).toBeLessThanOrEqual(4);
  });

  test('short copies are written again, and a base of many pieces is not copied from: the new content is one file', async () => {
    const short = await stageSteps(store, 'dev/base', base, [{ copy: { start: 0, end: MIN_LINKED_COPY - 2 } }, { data: randomBytes(10) }]);
    await store.place(short, 'dev/short');
    const pieces = (JSON.parse(await fs.readFile(path.join(root, 'dev/short', PIECES_FILE), 'utf8')) as CompositeManifest).pieces;
    expect(pieces.map((p) => p.file)).toEqual([pieces[0]!.file]);

    // A composite of many pieces: every other 300 KiB copied, with a byte of new data between.
    const many: Step[] = [];
    for (let i = 0; i < COMPACT_AT; i++) many.push({ copy: { start: i * 180_000, end: i * 180_000 + 179_999 + MIN_LINKED_COPY } }, { data: Buffer.of(i) });
    const fragmented = expected(base, many);
    await store.place(await stageSteps(store, 'dev/base', base, many), 'dev/many');
    expect((await readAll(store, 'dev/many')).equals(fragmented)).toBe(true);
    const compact = await stageSteps(store, 'dev/many', fragmented, [{ copy: { start: 0, end: fragmented.length - 1 } }]);
    await store.place(compact, 'dev/compact');
    expect(statSync(path.join(root, 'dev/compact')).isFile()).toBe(true);
    expect((await readAll(store, 'dev/compact')).equals(fragmented)).toBe(true);
  });

  test('a failed staging leaves nothing, a base gone is ContentNotFoundError, and old staging folders are swept', async () => {
    const staging = store.stageFromBase('dev/base', { maxBytes: 1024 * MiB });
    staging.copying(0, { start: 0, end: 2 * MiB - 1 });
    async function* broken() {
      yield base.subarray(0, MiB);
      yield randomBytes(MiB);
      throw new Error('the client went away');
    }
    await expect(staging.stage(Readable.from(broken()))).rejects.toThrow('the client went away');
    expect(await fs.readdir(path.join(root, '.staging'))).toEqual([]);

    await expect(stageSteps(store, 'dev/missing', base, steps)).rejects.toBeInstanceOf(ContentNotFoundError);
    expect(await fs.readdir(path.join(root, '.staging'))).toEqual([]);

    const left = await stageSteps(store, 'dev/base', base, steps);
    expect(await store.sweepStaging(60_000)).toBe(0);
    const then = new Date(Date.now() - 120_000);
    await fs.utimes(path.join(root, left.stagingKey), then, then);
    expect(await store.sweepStaging(60_000)).toBe(1);
    expect(await fs.readdir(path.join(root, '.staging'))).toEqual([]);
    expect((await readAll(store, 'dev/base')).equals(base)).toBe(true);
  });
});

describe('composite content on a file system without hard links (exFAT)', () => {
  const { mountExfat } = require('../client/exfat.support') as typeof import('../client/exfat.support');
  let mount: Awaited<ReturnType<typeof mountExfat>>;

  beforeAll(async () => {
    mount = await mountExfat(64);
  });

  afterAll(async () => {
    await mount?.close();
  });

  test('a delta\'s content is written whole, as one file, and nothing is left in staging', async () => {
    const store = new LocalContentStore(path.join(mount.root, 'store'));
    const base = randomBytes(2 * MiB);
    await store.write('dev/base', base);
    const steps: Step[] = [{ copy: { start: 0, end: MiB - 1 } }, { data: randomBytes(1000) }, { copy: { start: MiB, end: 2 * MiB - 1 } }];
    await store.place(await stageSteps(store, 'dev/base', base, steps), 'dev/next');
    expect(statSync(path.join(mount.root, 'store/dev/next')).isFile()).toBe(true);
    expect((await readAll(store, 'dev/next')).equals(expected(base, steps))).toBe(true);
    expect(await fs.readdir(path.join(mount.root, 'store/.staging'))).toEqual([]);
  });
});
