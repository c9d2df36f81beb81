import { createCipheriv, createHash } from 'node:crypto';
import { planDelta } from '../../clients/src/sdk/delta';
import { CHUNKING, ContentChunker, chunksOf, packChunks, unpackChunks } from '../../shared/protocol/chunking';

/* The chunking both sides share (docs/SYNC-CLIENT.md section 12): cuts depend on the bytes only. */

/**
 * Random-looking bytes that are the same on every run (AES-256-CTR of zeros under a key named by
 * `seed`): how many bytes a change costs depends on where cuts fall, so the bounds below are checked on
 * fixed contents rather than on a new draw each run.
 */
function fixedBytes(n: number, seed = `bytes ${n} ${++draws}`): Buffer {
  const key = createHash('sha256').update(seed).digest();
  return createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(n));
}
let draws = 0;

const data = fixedBytes(8 * 1024 * 1024, 'base');
const all = chunksOf(data);
const missing = (base: ReturnType<typeof chunksOf>, target: Buffer) => planDelta(base, chunksOf(target)).dataBytes;

test('chunks cover the content in order, within the sizes, whatever pieces the bytes come in', () => {
  expect(all.reduce((n, c) => (expect(c.offset).toBe(n), n + c.length), 0)).toBe(data.length);
  for (const c of all.slice(0, -1)) {
    expect(c.length).toBeGreaterThanOrEqual(CHUNKING.minBytes);
    expect(c.length).toBeLessThanOrEqual(CHUNKING.maxBytes);
  }
  const chunker = new ContentChunker();
  const pieces = [];
  for (let at = 0, step = 1; at < data.length; at += step, step = (step * 7 + 13) % 300_000 || 1) pieces.push(...chunker.update(data.subarray(at, at + step)));
  expect([...pieces, ...chunker.finish()]).toEqual(all);
});

test('an insertion, an overwrite or an append costs about its size, not the file', () => {
  // Around a change: the chunk it starts in, the one it ends in, and mostly one more before a cut of
  // the new bytes lands on a cut of the old ones again (any of them may be long; on some contents it
  // takes more, which is why these contents are fixed).
  expect(missing(all, Buffer.concat([fixedBytes(100, 'inserted'), data]))).toBeLessThan(3 * CHUNKING.maxBytes);
  const overwritten = Buffer.from(data);
  fixedBytes(1024 * 1024, 'overwritten').copy(overwritten, 3_333_333);
  expect(missing(all, overwritten)).toBeLessThan(1024 * 1024 + 3 * CHUNKING.maxBytes);
  expect(missing(all, Buffer.concat([data, fixedBytes(1024 * 1024, 'appended')]))).toBeLessThan(1024 * 1024 + CHUNKING.maxBytes);
});

test('fixed vectors pin the cut points and hashes, which every client and service must reproduce', () => {
  // SHA-256 in counter mode: the same 3 MiB everywhere, with cuts below and above the average length.
  const parts = [];
  for (let i = 0; i < (3 * 1024 * 1024) / 32; i++) parts.push(createHash('sha256').update(`filesync chunking ${i}`).digest());
  const chunks = chunksOf(Buffer.concat(parts));
  expect(chunks.map((c) => c.length)).toEqual([
    142649, 131416, 125433, 133030, 147778, 166484, 154910, 150167, 156035, 86808, 221900, 142270, 156677, 139314, 159342, 81781, 167126, 155978,
    139068, 185562, 202000,
  ]);
  expect(chunks[0]!.sha256).toBe('1f19fb3f75a9b9734cef86c5a42f46eb4dad896767520dc72399d0a6878d66ae');
  expect(createHash('sha256').update(packChunks(chunks)).digest('hex')).toBe('0ad1b67b28526b1378940b09250e27939076eac561ddec8e40bc74cb7d6deb2b');
  // Bytes that never satisfy a mask are cut at the largest length.
  expect(chunksOf(Buffer.alloc(2 * 1024 * 1024 + 1000)).map((c) => c.length)).toEqual([524288, 524288, 524288, 524288, 1000]);
});

test('a packed list unpacks to the same chunks', () => {
  expect(unpackChunks(packChunks(all))).toEqual(all);
});

describe('cutting a file against the chunk list of its earlier content', () => {
  const { chunkFileAgainst } = require('../../clients/src/cli/chunk.reuse') as typeof import('../../clients/src/cli/chunk.reuse');
  const os = require('node:os') as typeof import('node:os');
  const fs = require('node:fs') as typeof import('node:fs');
  const path = require('node:path') as typeof import('node:path');
  const overwritten = Buffer.from(data);
  fixedBytes(1024 * 1024).copy(overwritten, 3_333_333);
  test.each([
    ['unchanged', data],
    ['100 bytes inserted at the start', Buffer.concat([fixedBytes(100), data])],
    ['1 MiB overwritten in the middle', overwritten],
    ['1 MiB appended', Buffer.concat([data, fixedBytes(1024 * 1024)])],
    ['cut short', data.subarray(0, 5_000_000)],
    ['10 bytes deleted and 1 MiB inserted', Buffer.concat([data.subarray(0, 2_000_000), fixedBytes(1024 * 1024), data.subarray(2_000_010)])],
    ['all new', fixedBytes(3 * 1024 * 1024)],
    ['grown past 64 MiB (the whole digest taken on another thread)', Buffer.concat([data, fixedBytes(57 * 1024 * 1024)])],
  ])('%s: the same chunks and digest as cutting the whole file', async (_name, content) => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'chunks-')), 'f');
    fs.writeFileSync(file, content);
    const got = await chunkFileAgainst(file, all);
    expect(got.chunks).toEqual(chunksOf(content));
    expect(got.sha256).toBe(createHash('sha256').update(content).digest('hex'));
    expect(got.size).toBe(content.length);
    // The 64 MiB case writes and reads that much: more than the default 5 s on a busy machine.
  }, 60_000);
});

describe('cutting a whole file', () => {
  const { chunkFile } = require('../../clients/src/cli/chunk.reuse') as typeof import('../../clients/src/cli/chunk.reuse');
  const os = require('node:os') as typeof import('node:os');
  const fs = require('node:fs') as typeof import('node:fs');
  const path = require('node:path') as typeof import('node:path');
  test.each([
    ['3 MiB', fixedBytes(3 * 1024 * 1024)],
    ['65 MiB (the whole digest taken on another thread)', fixedBytes(65 * 1024 * 1024)],
  ])('%s: the chunks and digest of its bytes', async (_name, content) => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'chunks-')), 'f');
    fs.writeFileSync(file, content);
    const got = await chunkFile(file);
    expect(got.chunks).toEqual(chunksOf(content));
    expect(got.sha256).toBe(createHash('sha256').update(content).digest('hex'));
    expect(got.size).toBe(content.length);
  }, 60_000);
});
