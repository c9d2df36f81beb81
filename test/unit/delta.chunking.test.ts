import { randomBytes } from 'node:crypto';
import { planDelta } from '../../clients/src/sdk/delta';
import { CHUNKING, ContentChunker, chunksOf, packChunks, unpackChunks } from '../../shared/protocol/chunking';

/* The chunking both sides share (docs/SYNC-CLIENT.md section 12): cuts depend on the bytes only. */

const data = randomBytes(8 * 1024 * 1024);
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
  expect(missing(all, Buffer.concat([randomBytes(100), data]))).toBeLessThan(2 * CHUNKING.maxBytes);
  const overwritten = Buffer.from(data);
  randomBytes(1024 * 1024).copy(overwritten, 3_333_333);
  expect(missing(all, overwritten)).toBeLessThan(1024 * 1024 + 2 * CHUNKING.maxBytes);
  expect(missing(all, Buffer.concat([data, randomBytes(1024 * 1024)]))).toBeLessThan(1024 * 1024 + CHUNKING.maxBytes);
});

test('a packed list unpacks to the same chunks', () => {
  expect(unpackChunks(packChunks(all))).toEqual(all);
});

describe('cutting a file against the chunk list of its earlier content', () => {
  const { chunkFileAgainst } = require('../../clients/src/cli/chunk.reuse') as typeof import('../../clients/src/cli/chunk.reuse');
  const os = require('node:os') as typeof import('node:os');
  const fs = require('node:fs') as typeof import('node:fs');
  const path = require('node:path') as typeof import('node:path');
  const { createHash } = require('node:crypto') as typeof import('node:crypto');
  const overwritten = Buffer.from(data);
  randomBytes(1024 * 1024).copy(overwritten, 3_333_333);
  test.each([
    ['unchanged', data],
    ['100 bytes inserted at the start', Buffer.concat([randomBytes(100), data])],
    ['1 MiB overwritten in the middle', overwritten],
    ['1 MiB appended', Buffer.concat([data, randomBytes(1024 * 1024)])],
    ['cut short', data.subarray(0, 5_000_000)],
    ['10 bytes deleted and 1 MiB inserted', Buffer.concat([data.subarray(0, 2_000_000), randomBytes(1024 * 1024), data.subarray(2_000_010)])],
    ['all new', randomBytes(3 * 1024 * 1024)],
  ])('%s: the same chunks and digest as cutting the whole file', async (_name, content) => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'chunks-')), 'f');
    fs.writeFileSync(file, content);
    const got = await chunkFileAgainst(file, all);
    expect(got.chunks).toEqual(chunksOf(content));
    expect(got.sha256).toBe(createHash('sha256').update(content).digest('hex'));
    expect(got.size).toBe(content.length);
  });
});
