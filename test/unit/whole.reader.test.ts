import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { WholeReader } from '../../shared/storage/local/whole.reader';

/**
 * shared/storage/local/whole.reader.ts: its threads hold each shared buffer once and forget the least
 * recently used past a bound, on the word of the reading side; whatever the order, every read lands
 * in the buffer it names.
 */
let dir: string;
const files: { file: string; bytes: Buffer }[] = [];

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'whole-reader-'));
  for (let i = 0; i < 12; i++) {
    const bytes = randomBytes(1000 + i * 37);
    const file = path.join(dir, `f${i}`);
    await fs.writeFile(file, bytes);
    files.push({ file, bytes });
  }
});

afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

test('reads into many more shared buffers than a thread holds, buffers reused in any order, many in one batch', async () => {
  const reader = new WholeReader();
  // 40 buffers, more than twice what a thread holds; each read names one of them at an offset.
  const buffers = Array.from({ length: 40 }, () => Buffer.from(new SharedArrayBuffer(64 * 1024)));
  let seed = 7;
  const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  for (let round = 0; round < 30; round++) {
    // Up to 24 reads a batch, some batches naming more distinct buffers than a thread holds.
    const batch = Array.from({ length: 1 + next(24) }, () => {
      const { file, bytes } = files[next(files.length)]!;
      const buf = buffers[next(buffers.length)]!;
      const offset = next(buf.length - bytes.length);
      return { file, bytes, into: buf.subarray(offset, offset + bytes.length) };
    });
    // Two reads of one batch must not land in the same bytes: each gets a buffer of its own here.
    const seen = new Set<Buffer>();
    const own = batch.filter(({ into }) => {
      const key = Buffer.from(into.buffer);
      if ([...seen].some((s) => s.buffer === key.buffer)) return false;
      seen.add(key);
      return true;
    });
    const results = await reader.read(own.map(({ file, into }) => ({ file, into, crc32: true })));
    own.forEach(({ bytes, into }, i) => {
      expect(results[i]).toEqual({ size: bytes.length, read: bytes.length, crc32: crc32(bytes) });
      expect(Buffer.compare(into, bytes)).toBe(0);
    });
  }
});

test('a missing file and a folder are answered as such, beside reads that succeed', async () => {
  const reader = new WholeReader();
  const buf = Buffer.from(new SharedArrayBuffer(8192));
  const [missing, folder, ok] = await reader.read([
    { file: path.join(dir, 'nothing-here'), into: buf.subarray(0, 10), crc32: false },
    { file: dir, into: buf.subarray(10, 20), crc32: false },
    { file: files[0]!.file, into: buf.subarray(100, 100 + files[0]!.bytes.length), crc32: false },
  ]);
  expect(missing).toEqual(expect.objectContaining({ code: 'ENOENT' }));
  expect(folder).toEqual(expect.objectContaining({ code: 'EISDIR' }));
  expect(ok).toEqual({ size: files[0]!.bytes.length, read: files[0]!.bytes.length, crc32: undefined });
  expect(Buffer.compare(buf.subarray(100, 100 + files[0]!.bytes.length), files[0]!.bytes)).toBe(0);
});

test('only shared memory is read into', async () => {
  expect(() => new WholeReader().read([{ file: files[0]!.file, into: Buffer.alloc(10), crc32: false }])).toThrow('shared memory');
});

test('a file longer or shorter than the bytes asked for is told by its size', async () => {
  const reader = new WholeReader();
  const buf = Buffer.from(new SharedArrayBuffer(8192));
  const { file, bytes } = files[3]!;
  const [longer, shorter, exact] = await reader.read([
    { file, into: buf.subarray(0, bytes.length - 1), crc32: false },
    { file, into: buf.subarray(2000, 2000 + bytes.length + 5), crc32: false },
    { file, into: buf.subarray(4000, 4000 + bytes.length), crc32: false },
  ]);
  expect(longer).toEqual({ size: bytes.length, read: bytes.length - 1, crc32: undefined });
  expect(shorter).toEqual({ size: bytes.length, read: bytes.length, crc32: undefined });
  expect(exact).toEqual({ size: bytes.length, read: bytes.length, crc32: undefined });
  expect(Buffer.compare(buf.subarray(2000, 2000 + bytes.length), bytes)).toBe(0);
});
