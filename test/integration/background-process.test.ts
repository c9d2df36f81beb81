import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import sharp from 'sharp';
import { Api } from '../support/client';
import { waitFor } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { spawnWorker, stopWorker, type WorkerProcess } from '../support/workers';
import { DELTA_MIN_BYTES } from '../../shared/protocol/chunking';
import { createContentStore } from '../../shared/storage/store.factory';
import { IMAGE_THREAD_NICE } from '../../shared/thumbnails/thumbnail.maker';
import { ThumbnailRepository } from '../../shared/thumbnails/thumbnail.repository';
import { EAGER_THUMBNAIL_SIZES, thumbnailKey } from '../../shared/thumbnails/thumbnail.sizes';

/**
 * A built worker (dist/, as `npm test` builds it) consumes the thumbnail and chunk-list queues in a
 * process of its own whose every thread runs at nice 19 (services/worker/background.child.ts).
 */
let env: TestEnv;
let gateway: RunningGateway;
let api: Api;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  env = await createTestEnv();
  gateway = await startGateway(env);
  ({ api } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password));
});

afterAll(async () => {
  await Promise.all(workers.map((w) => stopWorker(w, 'SIGKILL')));
  await gateway?.close();
  await env?.dropAll();
});

/** The fields of /proc/<pid>[/task/<tid>]/stat from the state on (state is [0], the parent's pid [1], nice [16]). */
function statFields(file: string): string[] | undefined {
  try {
    const stat = readFileSync(file, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** The processes whose parent is `pid` and that have not ended (a zombie waits for its reaper). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      const f = statFields(`/proc/${entry}/stat`);
      return f !== undefined && Number(f[1]) === pid && f[0] !== 'Z';
    })
    .map(Number);
}

const alive = (pid: number) => {
  const f = statFields(`/proc/${pid}/stat`);
  return f !== undefined && f[0] !== 'Z';
};

/** The nice value of each thread of `pid`. */
const threadNices = (pid: number) => readdirSync(`/proc/${pid}/task`).map((tid) => Number(statFields(`/proc/${pid}/task/${tid}/stat`)?.[16]));

/** A JPEG no other test makes: a gradient offset by `seed`. */
async function picture(seed: number): Promise<Buffer> {
  const [width, height] = [640, 480];
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < raw.length; i += 3) raw[i] = raw[i + 1] = ((i / 3) % width) + seed;
  return sharp(raw, { raw: { width, height, channels: 3 } }).jpeg().toBuffer();
}

/** Whether a chunk list of the content of a new large file was kept within `ms`. */
async function chunkListed(name: string, ms: number): Promise<boolean> {
  const res = await api.upload({}, { name, content: randomBytes(DELTA_MIN_BYTES + 1) });
  expect(res.status).toBe(201);
  const { id } = res.body as { id: string };
  const { storage_key: key } = await env.db('resources').where({ id }).first('storage_key');
  return waitFor(async () => (await env.db('content_chunk_lists').where({ storage_key: key }).first()) !== undefined, ms, 100);
}

async function thumbnailed(name: string, seed: number): Promise<boolean> {
  const res = await api.upload({}, { name, content: await picture(seed) });
  expect(res.status).toBe(201);
  const { sha256 } = res.body as { sha256: string };
  const thumbnails = new ThumbnailRepository(env.db);
  if (!(await waitFor(async () => (await thumbnails.state(sha256)) === 'ready', 30_000, 100))) return false;
  const store = createContentStore(env.config);
  const stored = await Promise.all(EAGER_THUMBNAIL_SIZES.map((size) => store.stat(thumbnailKey(sha256, size))));
  return stored.every((s) => s !== undefined && s.size > 0);
}

test('the background process makes thumbnails at nice 19, logs as the worker, is started again when killed and stops with the worker', async () => {
  const worker = await spawnWorker(env, { LOG_LEVEL: 'debug' });
  workers.push(worker);
  const workerPid = worker.child.pid!;
  const [first, ...others] = childrenOf(workerPid);
  expect(first).toBeDefined();
  expect(others).toEqual([]);
  expect(threadNices(first!).filter((nice) => nice !== IMAGE_THREAD_NICE)).toEqual([]);
  // A session of its own (the session id is [3] of statFields), lowered as a whole where the kernel
  // groups sessions for scheduling; the worker's keeps its priority.
  expect(statFields(`/proc/${first}/stat`)?.[3]).not.toBe(statFields(`/proc/${workerPid}/stat`)?.[3]);
  if (existsSync('/proc/self/autogroup')) {
    expect(readFileSync(`/proc/${first}/autogroup`, 'utf8')).toMatch(new RegExp(`nice ${IMAGE_THREAD_NICE}\\s*$`));
    expect(readFileSync(`/proc/${workerPid}/autogroup`, 'utf8')).not.toMatch(new RegExp(`nice ${IMAGE_THREAD_NICE}\\s*$`));
  }
  // The worker's own threads keep the priority it was started with (this test's).
  expect(threadNices(workerPid).filter((nice) => nice !== os.getPriority())).toEqual([]);

  expect(await thumbnailed('first.jpg', 1)).toBe(true);
  const done = () =>
    worker
      .output()
      .split('\n')
      .filter((line) => line.includes('"thumbnail job done"'))
      .map((line) => JSON.parse(line) as { service: string; made: number });
  // The line follows the job's commit, which the thumbnail's check sees first; a busy machine gives
  // the process, at nice 19, the CPU to write it last.
  expect(await waitFor(async () => done().length > 0, 10_000, 50)).toBe(true);
  expect(done()).toEqual([expect.objectContaining({ service: 'worker', made: 1 })]);

  process.kill(first!, 'SIGKILL');
  let second: number | undefined;
  expect(await waitFor(async () => (second = childrenOf(workerPid).find((pid) => pid !== first)) !== undefined, 10_000, 50)).toBe(true);
  expect(worker.output()).toContain('background process ended; starting it again');
  expect(await thumbnailed('second.jpg', 2)).toBe(true);
  expect(threadNices(second!).filter((nice) => nice !== IMAGE_THREAD_NICE)).toEqual([]);

  await stopWorker(worker, 'SIGTERM');
  expect(await worker.exited).toBe(0);
  expect(alive(second!)).toBe(false);
});

test('chunk lists are made in the background process, none while it is stopped', async () => {
  const worker = await spawnWorker(env);
  workers.push(worker);
  const [child] = childrenOf(worker.child.pid!);
  expect(child).toBeDefined();
  expect(await chunkListed('first.bin', 30_000)).toBe(true);
  // Stopped, it cuts nothing, and nobody else does: the worker's own process consumes no chunk-list queue.
  process.kill(child!, 'SIGSTOP');
  try {
    expect(await chunkListed('second.bin', 2_000)).toBe(false);
  } finally {
    process.kill(child!, 'SIGCONT');
  }
  expect(await chunkListed('third.bin', 30_000)).toBe(true);
  await stopWorker(worker, 'SIGTERM');
});

test('the background process exits when its worker dies', async () => {
  const worker = await spawnWorker(env);
  workers.push(worker);
  const [child] = childrenOf(worker.child.pid!);
  expect(child).toBeDefined();
  await stopWorker(worker, 'SIGKILL');
  expect(await waitFor(async () => !alive(child!), 10_000, 50)).toBe(true);
});
