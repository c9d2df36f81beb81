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
