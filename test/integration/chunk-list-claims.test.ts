import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Api } from '../support/client';
import { waitFor } from '../support/fixtures';
import { startChunkLists, stopChunkLists, type ChunkListsSetup } from '../support/chunk-lists';
import { spawnWorker } from '../support/workers';
import { uploadsStreamingKey } from '../../shared/chunks/uploads.quiet';
import { CLAIM_MS, ListClaims, listClaimKey, type ClaimClient } from '../../shared/chunks/list.claims';
import { DELTA_MIN_BYTES } from '../../shared/protocol/chunking';
import { CHUNK_LIST_QUEUE, chunkListJobId } from '../../shared/queue/chunk-list.contract';
import type { RedisConnection } from '../../shared/redis/redis.connection';

/**
 * One content's chunk list is cut once across gateways and workers (shared/chunks/list.claims.ts):
 * the maker holds a lapsing claim in Redis, a gateway asked for the list waits for its holder, a
 * worker leaves the list to it.
 */
let setup: ChunkListsSetup;
let api: Api;
let redis: RedisConnection;
let prefix: string;
let claims: ListClaims;

beforeAll(async () => {
  setup = await startChunkLists();
  ({ api, redis, prefix } = setup);
  claims = new ListClaims(async () => redis as unknown as ClaimClient, prefix);
});

afterAll(() => stopChunkLists(setup));

const storageKeyOf = async (fileId: string): Promise<string> => (await setup.env.db('resources').where({ id: fileId }).first('storage_key')).storage_key;
const listed = async (storageKey: string) => (await setup.env.db('content_chunk_lists').where({ storage_key: storageKey }).first()) !== undefined;

test('a claim is held by one maker at a time, freed by its release, and lapses when its holder stops renewing it', async () => {
  const key = `probe-${Date.now()}`;
  const first = await claims.claim(key);
  expect(first).toBeDefined();
  expect(await claims.claim(key)).toBeUndefined();
  // Renewed while held: still held past a claim's first life.
  await new Promise((r) => setTimeout(r, CLAIM_MS + 500));
  expect(await claims.claim(key)).toBeUndefined();
  await first!.release();
  await first!.release();
  const second = await claims.claim(key);
  expect(second).toBeDefined();
  await second!.release();

  // A holder that died: its key, never renewed, lapses, and the waiter stops waiting then.
  await redis.set(listClaimKey(prefix, key), 'gone', 'PX', 400);
  const t = Date.now();
  expect(await claims.waitWhileHeld(key, async () => undefined, Date.now() + 10_000)).toBeUndefined();
  expect(Date.now() - t).toBeGreaterThanOrEqual(300);
  // The list kept while the claim is held ends the wait with it.
  await redis.set(listClaimKey(prefix, key), 'busy', 'PX', 60_000);
  let looks = 0;
  expect(await claims.waitWhileHeld(key, async () => (++looks >= 3 ? 'the list' : undefined), Date.now() + 10_000)).toBe('the list');
  await redis.del(listClaimKey(prefix, key));
});

test('a gateway asked for a list another maker is cutting waits for it, then cuts it itself once the claim ends without one', async () => {
  const file = await api.upload({}, { name: 'claimed.bin', content: randomBytes(DELTA_MIN_BYTES + 4096) });
  expect(file.status).toBe(201);
  const storageKey = await storageKeyOf(file.body.id);
  // No worker runs in this test: the list exists only once the gateway makes it.
  await setup.env.db('content_chunk_lists').where({ storage_key: storageKey }).delete();
  await redis.set(listClaimKey(prefix, storageKey), 'a worker', 'PX', 60_000);
  let answered: number | undefined;
  const asked = api.request('GET', `/v1/files/${file.body.id}/chunks`).then((res) => {
    answered = res.status;
    return res;
  });
  await new Promise((r) => setTimeout(r, 600));
  expect(answered).toBeUndefined();
  expect(await listed(storageKey)).toBe(false);
  await redis.del(listClaimKey(prefix, storageKey));
  const res = await asked;
  expect(res.status).toBe(200);
  expect(res.body.chunks.length).toBeGreaterThan(0);
  expect(await listed(storageKey)).toBe(true);
  // The gateway's own claim is freed once its list is kept.
  expect(await redis.pttl(listClaimKey(prefix, storageKey))).toBeLessThan(0);
});

test('a claim held past the wait does not hold the request: the gateway cuts the list itself', async () => {
  const file = await api.upload({}, { name: 'stuck.bin', content: randomBytes(DELTA_MIN_BYTES + 4096) });
  const storageKey = await storageKeyOf(file.body.id);
  await setup.env.db('content_chunk_lists').where({ storage_key: storageKey }).delete();
  await redis.set(listClaimKey(prefix, storageKey), 'a stuck maker', 'PX', 60_000);
  const res = await api.request('GET', `/v1/files/${file.body.id}/chunks`);
  expect(res.status).toBe(200);
  expect(await listed(storageKey)).toBe(true);
  // The other maker's claim is left as it was.
  expect(await redis.get(listClaimKey(prefix, storageKey))).toBe('a stuck maker');
  await redis.del(listClaimKey(prefix, storageKey));
});

test("a worker's job leaves a list a gateway is cutting to that gateway", async () => {
  setup.worker = await spawnWorker(setup.env);
  const queue = new Queue(CHUNK_LIST_QUEUE, { connection: redis, prefix });
  try {
    // A mark of uploads streaming holds the job back until the claim is taken, as a gateway would.
    const mark = uploadsStreamingKey(prefix);
    await redis.set(mark, 'held by the test', 'PX', 30_000);
    const file = await api.upload({}, { name: 'left.bin', content: randomBytes(DELTA_MIN_BYTES + 8192) });
    expect(file.status).toBe(201);
    // The gateway set the mark for its own 0.6 s while the body streamed: set again at once, for longer.
    await redis.set(mark, 'held by the test', 'PX', 30_000);
    const storageKey = await storageKeyOf(file.body.id);
    const jobId = chunkListJobId(storageKey);
    expect(await queue.getJob(jobId)).toBeDefined();
    await redis.set(listClaimKey(prefix, storageKey), 'a gateway', 'PX', 60_000);
    await redis.del(mark);
    expect(await waitFor(async () => (await queue.getJob(jobId)) === undefined, 15_000, 50)).toBe(true);
    expect(await listed(storageKey)).toBe(false);

    // Without a claim the worker makes the next content's list.
    const other = await api.upload({}, { name: 'made.bin', content: randomBytes(DELTA_MIN_BYTES + 8192) });
    const otherKey = await storageKeyOf(other.body.id);
    expect(await waitFor(() => listed(otherKey), 15_000, 50)).toBe(true);
    await redis.del(listClaimKey(prefix, storageKey));
  } finally {
    await queue.close();
  }
});
