import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { Api } from '../support/client';
import { waitFor } from '../support/fixtures';
import { startChunkLists, stopChunkLists, type ChunkListsSetup } from '../support/chunk-lists';
import { spawnWorker } from '../support/workers';
import { STREAMING_MARK_MS, UploadsStreaming, untilUploadsQuiet, uploadsStreamingKey, type MarkClient } from '../../shared/chunks/uploads.quiet';
import { DELTA_MIN_BYTES } from '../../shared/protocol/chunking';
import type { RedisConnection } from '../../shared/redis/redis.connection';

/**
 * Chunk lists wait for the uploads to leave the machine quiet (shared/chunks/uploads.quiet.ts): a
 * gateway marks every large body while it streams, and the worker's list jobs wait for the mark to
 * lapse, at most a bounded time.
 */
let setup: ChunkListsSetup;
let api: Api;
let redis: RedisConnection;
let key: string;

beforeAll(async () => {
  setup = await startChunkLists();
  ({ api, redis } = setup);
  key = uploadsStreamingKey(setup.prefix);
});

afterAll(() => stopChunkLists(setup));

const marks = () => redis as unknown as MarkClient;

/**
 * A PUT of `bytes` to a file's content, sent in 64 KiB pieces every `everyMs`; resolves with the
 * status once answered.
 */
function slowPut(fileId: string, bytes: number, everyMs: number): { answered: Promise<number> } {
  const url = new URL(`/v1/files/${fileId}/content`, setup.gateway.baseUrl);
  const req = http.request(url, { method: 'PUT', headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/octet-stream', 'content-length': bytes } });
  const answered = new Promise<number>((resolve, reject) => {
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
  const body = randomBytes(bytes);
  let sent = 0;
  const timer = setInterval(() => {
    const piece = body.subarray(sent, sent + 64 * 1024);
    sent += piece.length;
    if (sent >= bytes) {
      clearInterval(timer);
      req.end(piece);
    } else req.write(piece);
  }, everyMs);
  return { answered };
}

test('a gateway marks a large body while it streams, and the mark lapses once it ended', async () => {
  const file = await api.upload({}, { name: 'target.bin', content: 'x' });
  expect(file.status).toBe(201);
  expect(await redis.pttl(key)).toBeLessThan(0);
  // 1 MiB in 16 pieces, 100 ms apart: about 1.6 s.
  const put = slowPut(file.body.id, 1024 * 1024, 100);
  expect(await waitFor(async () => (await redis.pttl(key)) > 0, 2_000, 20)).toBe(true);
  // Renewed while it streams: still there past the first mark's life.
  await new Promise((r) => setTimeout(r, STREAMING_MARK_MS / 2 + 200));
  expect(await redis.pttl(key)).toBeGreaterThan(0);
  expect(await put.answered).toBe(200);
  expect(await waitFor(async () => (await redis.pttl(key)) < 0, STREAMING_MARK_MS + 1_000, 50)).toBe(true);

  // A small body sets no mark.
  const small = await api.upload({}, { name: 'small.bin', content: randomBytes(64 * 1024) });
  expect(small.status).toBe(201);
  expect(await redis.pttl(key)).toBeLessThan(0);
});

test('waiting for quiet ends when the mark lapses, at the deadline, and at once without a mark', async () => {
  const probe = `${key}:probe-${Date.now()}`;
  let t = Date.now();
  await untilUploadsQuiet(marks(), probe, Date.now() + 5_000);
  expect(Date.now() - t).toBeLessThan(200);

  await redis.set(probe, '1', 'PX', 400);
  t = Date.now();
  await untilUploadsQuiet(marks(), probe, Date.now() + 5_000);
  expect(Date.now() - t).toBeGreaterThanOrEqual(350);
  // 0: lapsing within the millisecond, which the wait also takes for quiet.
  expect(await redis.pttl(probe)).toBeLessThanOrEqual(0);

  // Renewed without end: the deadline lets it go.
  await redis.set(probe, '1', 'PX', 60_000);
  t = Date.now();
  await untilUploadsQuiet(marks(), probe, Date.now() + 300);
  expect(Date.now() - t).toBeGreaterThanOrEqual(250);
  expect(await redis.pttl(probe)).toBeGreaterThan(0);
  await redis.del(probe);
});

test('one gateway counts its bodies: the mark is renewed until the last one ends', async () => {
  const probe = `${key}:count-${Date.now()}`;
  const streaming = new UploadsStreaming(async () => marks(), probe);
  const first = streaming.begin();
  const second = streaming.begin();
  expect(streaming.streaming).toBe(2);
  first();
  first();
  expect(streaming.streaming).toBe(1);
  await new Promise((r) => setTimeout(r, STREAMING_MARK_MS + 300));
  expect(await redis.pttl(probe)).toBeGreaterThan(0);
  second();
  expect(streaming.streaming).toBe(0);
  expect(await waitFor(async () => (await redis.pttl(probe)) < 0, STREAMING_MARK_MS + 1_000, 50)).toBe(true);
  streaming.close();
});

test('a chunk list is made once the large bodies streaming beside it have ended', async () => {
  setup.worker = await spawnWorker(setup.env);
  const target = await api.upload({}, { name: 'slow-target.bin', content: 'x' });
  // About 3 s of a 3 MiB body, 64 KiB every 60 ms.
  const put = slowPut(target.body.id, 3 * 1024 * 1024, 60);
  expect(await waitFor(async () => (await redis.pttl(key)) > 0, 2_000, 20)).toBe(true);
  const big = await api.upload({}, { name: 'listed.bin', content: randomBytes(DELTA_MIN_BYTES + 1) });
  expect(big.status).toBe(201);
  const { storage_key: storageKey } = await setup.env.db('resources').where({ id: big.body.id }).first('storage_key');
  const listed = async () => (await setup.env.db('content_chunk_lists').where({ storage_key: storageKey }).first()) !== undefined;
  // Not while the body streams (its job is queued: the worker takes a new job within milliseconds).
  await new Promise((r) => setTimeout(r, 1_000));
  expect(await redis.pttl(key)).toBeGreaterThan(0);
  expect(await listed()).toBe(false);
  expect(await put.answered).toBe(200);
  const ended = Date.now();
  expect(await waitFor(listed, 15_000, 50)).toBe(true);
  // Made after the mark lapsed, not at the bound.
  expect(Date.now() - ended).toBeLessThan(8_000);
});
