import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { prepareArchive, sendArchive, type ArchiveEntry } from '../../services/gateway/archive/zip.writer';
import { LocalContentStore } from '../../shared/storage/local/local.store';

/**
 * The ZIP writer against real content on disk, its output read by independent readers: Python's
 * zipfile (every CRC checked by testzip) and Info-ZIP's unzip -t.
 */
let dir: string;
let store: LocalContentStore;
let server: http.Server;
let baseUrl: string;
const archives = new Map<string, { entries: ArchiveEntry[]; forceZip64?: boolean }>();

const KiB = 1024;
const contents = new Map<string, Buffer>();

async function put(key: string, bytes: Buffer): Promise<void> {
  const staged = await store.stage(Readable.from([bytes]), { maxBytes: 1 << 30 });
  await store.place(staged, key);
  contents.set(key, bytes);
}

const at = new Date(2024, 6, 14, 9, 30, 42);
const entry = (p: string, key: string): ArchiveEntry => ({ path: p, storageKey: key, sizeBytes: contents.get(key)?.length ?? 3, updatedAt: at });

async function* listed(entries: ArchiveEntry[]): AsyncGenerator<ArchiveEntry> {
  for (const e of entries) yield e;
}

/** Python's zipfile: testzip() (every CRC), then each entry's name, size, SHA-256, flags, version needed and date. */
function pythonRead(file: string): { bad: string | null; entries: { name: string; size: number; sha: string; flags: number; version: number; date: number[] }[] } {
  const script = [
    'import hashlib, json, sys, zipfile',
    'z = zipfile.ZipFile(sys.argv[1])',
    'bad = z.testzip()',
    'out = [dict(name=i.filename, size=i.file_size, sha=hashlib.sha256(z.read(i)).hexdigest(), flags=i.flag_bits, version=i.extract_version, date=list(i.date_time)) for i in z.infolist()]',
    'print(json.dumps(dict(bad=bad, entries=out)))',
  ].join('\n');
  return JSON.parse(execFileSync('python3', ['-c', script, file]).toString('utf8'));
}

async function download(name: string): Promise<Buffer> {
  const res = await fetch(`${baseUrl}/${name}`);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

async function readBoth(zip: Buffer) {
  const file = path.join(dir, `out-${randomBytes(4).toString('hex')}.zip`);
  await fs.writeFile(file, zip);
  execFileSync('unzip', ['-tq', file]);
  return pythonRead(file);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'fs-zipw-'));
  store = new LocalContentStore(path.join(dir, 'store'));
  await put('d/empty', Buffer.alloc(0));
  await put('d/utf8', Buffer.from('héllo wörld', 'utf8'));
  await put('d/big', randomBytes(2 * 1024 * KiB + 12345));
  for (let i = 0; i < 60; i++) await put(`d/s${i}`, randomBytes(1 + ((i * 7919) % (100 * KiB))));
  const tree: ArchiveEntry[] = [
    entry('empty.txt', 'd/empty'),
    entry('été/naïve — 日本.txt', 'd/utf8'),
    entry('a/b/c/deep.bin', 'd/big'),
    ...Array.from({ length: 60 }, (_, i) => entry(`many/s-${String(i).padStart(2, '0')}.bin`, `d/s${i}`)),
  ];
  archives.set('tree', { entries: tree });
  archives.set('tree64', { entries: tree, forceZip64: true });
  // CRCs recorded when the contents were written: in the local headers, no descriptors; every other one, or all.
  const known = tree.map((e) => ({ ...e, crc32: crc32(contents.get(e.storageKey)!) }));
  archives.set('known', { entries: known });
  archives.set('known64', { entries: known, forceZip64: true });
  archives.set('mixed', { entries: known.map((e, i) => (i % 2 === 0 ? e : { ...e, crc32: null })) });
  archives.set('known-wrong', { entries: known.map((e, i) => (i === 4 ? { ...e, crc32: (e.crc32 + 1) >>> 0 } : e)) });
  archives.set('missing', { entries: [...tree.slice(0, 20), { ...tree[3]!, path: 'gone.bin', storageKey: 'd/not-there' }, ...tree.slice(20)] });
  archives.set('wrong-size', { entries: [tree[3]!, { ...tree[4]!, sizeBytes: tree[4]!.sizeBytes + 1 }, tree[5]!] });
  // The end of an archive waits for a check made meanwhile (a link's download count): one that passes late, one that fails.
  const ends: Record<string, () => Promise<void>> = {
    'ends-late': () => new Promise((resolve) => setTimeout(resolve, 300)),
    'ends-refused': () => new Promise((_, reject) => setTimeout(() => reject(new Error('not counted')), 100)),
  };
  archives.set('ends-late', { entries: tree });
  archives.set('ends-refused', { entries: tree });
  server = http.createServer((req, res) => {
    const name = (req.url ?? '').slice(1);
    const a = archives.get(name)!;
    const endAfter = ends[name]?.();
    endAfter?.catch(() => undefined);
    if (endAfter) void prepareArchive(store, listed(a.entries)).send(res as never, endAfter);
    else void sendArchive(res as never, store, listed(a.entries), { forceZip64: a.forceZip64 });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await fs.rm(dir, { recursive: true, force: true });
});

test.each([['tree', false], ['tree64', true]])('%s: every entry whole, in order, UTF-8 names, empty and nested files, dates; ZIP64 records when forced', async (name, zip64) => {
  const zip = await download(name);
  const { bad, entries } = await readBoth(zip);
  expect(bad).toBeNull();
  const expected = archives.get(name)!.entries;
  expect(entries.map((e) => e.name)).toEqual(expected.map((e) => e.path));
  for (const [i, e] of entries.entries()) {
    const bytes = contents.get(expected[i]!.storageKey)!;
    expect({ size: e.size, sha: e.sha }).toEqual({ size: bytes.length, sha: sha(bytes) });
    // Bit 11: UTF-8 names; bit 3: CRC and sizes after the data.
    expect(e.flags).toBe(0x0808);
    expect(e.version).toBe(zip64 ? 45 : 20);
    expect(e.date).toEqual([2024, 7, 14, 9, 30, 42]);
  }
  // The ZIP64 end record and its locator, present only when asked for (the archive is small).
  expect(zip.includes(Buffer.from([0x50, 0x4b, 0x06, 0x06]))).toBe(zip64);
  expect(zip.includes(Buffer.from([0x50, 0x4b, 0x06, 0x07]))).toBe(zip64);
});

test.each([
  ['known', false, 0],
  ['known64', true, 0],
  ['mixed', false, 1],
])('%s: CRC-32s known before the bytes go in the local headers, with no descriptor', async (name, zip64, everyOther) => {
  const zip = await download(name);
  const { bad, entries } = await readBoth(zip);
  expect(bad).toBeNull();
  const expected = archives.get(name)!.entries;
  expect(entries.map((e) => e.name)).toEqual(expected.map((e) => e.path));
  for (const [i, e] of entries.entries()) {
    const bytes = contents.get(expected[i]!.storageKey)!;
    expect({ size: e.size, sha: e.sha }).toEqual({ size: bytes.length, sha: sha(bytes) });
    const follows = everyOther === 1 && i % 2 === 1;
    expect(e.flags).toBe(follows ? 0x0808 : 0x0800);
    expect(e.version).toBe(zip64 ? 45 : 20);
  }
  // Exactly the descriptors of the entries whose CRC was not known are missing from the length.
  const plain = await download(zip64 ? 'tree64' : 'tree');
  const skipped = expected.filter((e) => e.crc32 != null).length;
  expect(zip.length).toBe(plain.length - skipped * (zip64 ? 24 : 16));
});

test('a known CRC-32 is written as given, not taken again: a wrong one is what a reader finds', async () => {
  const { bad } = await readBoth(await download('known-wrong').catch(() => Buffer.alloc(0))).catch(() => ({ bad: 'unzip failed' }));
  expect(bad).not.toBeNull();
});

test.each(['missing', 'wrong-size'])('%s content in the middle cuts the response: never a complete-looking archive', async (name) => {
  // Cut before or after the status line left, depending on when the read failed: never whole.
  const outcome = await fetch(`${baseUrl}/${name}`)
    .then((res) => res.arrayBuffer())
    .then(
      () => 'whole',
      () => 'cut',
    );
  expect(outcome).toBe('cut');
});

test('an archive ends only once the check it waits for passed; a failed check cuts it', async () => {
  const started = Date.now();
  const { bad, entries } = await readBoth(await download('ends-late'));
  // The end waits for the check (300 ms): a whole archive cannot arrive before it passed.
  expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  expect(bad).toBeNull();
  expect(entries).toHaveLength(archives.get('ends-late')!.entries.length);
  const outcome = await fetch(`${baseUrl}/ends-refused`)
    .then((res) => res.arrayBuffer())
    .then(
      () => 'whole',
      () => 'cut',
    );
  expect(outcome).toBe('cut');
});

test('a client that goes away mid-archive stops it; the next archive is whole', async () => {
  const cut = await new Promise<void>((resolve, reject) => {
    const req = http.get(`${baseUrl}/tree`, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
  });
  expect(cut).toBeUndefined();
  const { bad, entries } = await readBoth(await download('tree'));
  expect(bad).toBeNull();
  expect(entries).toHaveLength(archives.get('tree')!.entries.length);
});
