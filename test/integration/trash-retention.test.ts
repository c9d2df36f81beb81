import { Queue } from 'bullmq';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { TrashRepository } from '../../shared/db/repositories/trash.repository';
import { retentionMs, TrashPurger } from '../../shared/lifecycle/trash.purger';
import { createContentStore } from '../../shared/storage/store.factory';
import { createLogger } from '../../shared/logger';
import {
  EXPIRE_UPLOADS_JOB,
  EXPIRE_VERSIONS_JOB,
  MAINTENANCE_QUEUE,
  PURGE_TRASH_JOB,
  purgeIntervalMs,
  SWEEP_THUMBNAILS_JOB,
  SWEEP_CRC32S_JOB,
  CRC32_SWEEP_MS,
  THUMBNAIL_SWEEP_MS,
  uploadExpirySweepMs,
} from '../../shared/queue/maintenance.contract';
import { redisOptions } from '../../shared/redis/redis.connection';
import { startMaintenance, type MaintenanceWorkers } from '../../services/worker/maintenance.workers';
import { Api } from '../support/client';
import { insertFile, waitFor } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { changesSince, deleteFile, feedCursorNow, onDisk, resourceRow, uploadFile } from '../support/lifecycle';
import { spawnWorker, stopWorker } from '../support/workers';

/** The scheduled purge of what was deleted more than TRASH_RETENTION_DAYS ago (here about 2.6 seconds). */
const RETENTION_DAYS = '0.00003';

let env: TestEnv;
let gateway: RunningGateway;
let api: Api;
let userId: string;

beforeAll(async () => {
  env = await createTestEnv({ TRASH_RETENTION_DAYS: RETENTION_DAYS });
  gateway = await startGateway(env);
  const { api: admin } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
  ({ api, userId } = await admin.createUser('keeper'));
});

afterAll(async () => {
  await gateway?.close();
  await env?.dropAll();
});

const purged = async (id: string) => (await resourceRow(env, id)).purged_at !== null;

describe('with the maintenance worker in this process', () => {
  let maintenance: MaintenanceWorkers;
  let second: MaintenanceWorkers;

  beforeAll(async () => {
    maintenance = await startMaintenance(env.config, env.db, createLogger('worker', 'silent'));
  });

  afterAll(async () => {
    await maintenance?.close();
    await second?.close();
  });

  test('a deleted file is purged once the retention has passed: content off the disk, a tombstone in the feed, gone from the trash', async () => {
    const keep = await uploadFile(api, 'keep.txt', 'still here');
    const file = await uploadFile(api, 'expire.txt', 'short-lived');
    const { storage_key: key } = await resourceRow(env, file.id);
    const cursor = await feedCursorNow(api);
    await deleteFile(api, file.id);

    // Eventually: the scheduled purge of the deleted file.
    expect(await waitFor(() => purged(file.id), 30_000, 200)).toBe(true);
    // The content is removed just after the commit that made the row a tombstone.
    // Eventually: the content off the disk.
    expect(await waitFor(async () => !(await onDisk(env, key!)), 30_000, 200)).toBe(true);

    expect(await resourceRow(env, file.id)).toMatchObject({ storage_key: null, rev: 3 });
    expect((await changesSince(api, cursor)).get(file.id)).toMatchObject({ deleted: true, rev: 3 });
    expect((await api.get('/v1/trash')).body.items.map((i: { id: string }) => i.id)).not.toContain(file.id);
    expect((await api.post(`/v1/trash/${file.id}/restore`)).status).toBe(404);
    // Active resources are never touched.
    expect(await resourceRow(env, keep.id)).toMatchObject({ purged_at: null, deleted_at: null, rev: 1 });
    expect((await api.get(`/v1/files/${keep.id}/content`)).text).toBe('still here');
  });

  test('the schedule is one job scheduler on the maintenance queue, however many workers register it', async () => {
    second = await startMaintenance(env.config, env.db, createLogger('worker', 'silent'));
    const queue = new Queue(MAINTENANCE_QUEUE, { connection: redisOptions(env.config.redisUrl, 'producer'), prefix: env.config.queuePrefix });
    try {
      const schedulers = await queue.getJobSchedulers();
      // One scheduler per task: the trash purge, and beside it the expiry of resumable uploads and of
      // versions, and the sweeps of thumbnails and CRC-32s whose content is gone.
      const byKey = schedulers.map((s) => ({ key: s.key, name: s.name, every: Number(s.every) })).sort((a, b) => a.key.localeCompare(b.key));
      expect(byKey).toEqual([
        { key: EXPIRE_UPLOADS_JOB, name: EXPIRE_UPLOADS_JOB, every: uploadExpirySweepMs(env.config.uploadExpiryMs) },
        { key: EXPIRE_VERSIONS_JOB, name: EXPIRE_VERSIONS_JOB, every: purgeIntervalMs(retentionMs(env.config.versionRetentionDays)) },
        { key: PURGE_TRASH_JOB, name: PURGE_TRASH_JOB, every: 1000 },
        { key: SWEEP_CRC32S_JOB, name: SWEEP_CRC32S_JOB, every: CRC32_SWEEP_MS },
        { key: SWEEP_THUMBNAILS_JOB, name: SWEEP_THUMBNAILS_JOB, every: THUMBNAIL_SWEEP_MS },
      ]);
      const purgeRun = async () => (await queue.getJobs(['completed'])).find((job) => job.name === PURGE_TRASH_JOB);
      // Eventually: a completed purge run.
      expect(await waitFor(async () => (await purgeRun()) !== undefined, 30_000, 200)).toBe(true);
      const run = await purgeRun();
      expect(run?.returnvalue).toEqual({ purged: expect.any(Number), filesRemoved: expect.any(Number) });
    } finally {
      await queue.close();
    }
  });
});

test('the purge takes only what was deleted before the cutoff, in chunks, and a second run finds nothing left', async () => {
  const old = await Promise.all(
    Array.from({ length: 7 }, (_, i) => insertFile(env.db, userId, `old-${i}.txt`, null, { deletedAt: new Date(Date.UTC(2021, 0, 1, 0, 0, i)) })),
  );
  const recent = await insertFile(env.db, userId, 'recent.txt', null, { deletedAt: new Date(Date.UTC(2021, 0, 2)) });
  const owners = new OwnerTransactions(env.db);
  const trash = new TrashRepository(env.db);
  const purger = new TrashPurger(owners, trash, createContentStore(env.config));
  const cutoff = new Date(Date.UTC(2021, 0, 1, 12));

  const first = await purger.purgeExpired(cutoff, 3);

  expect(first.purged).toBe(7);
  for (const id of old) expect(await purged(id)).toBe(true);
  expect(await purged(recent)).toBe(false);
  expect((await purger.purgeExpired(cutoff, 3)).purged).toBe(0);
});

test('a real worker process runs the schedule', async () => {
  const worker = await spawnWorker(env);
  try {
    const file = await uploadFile(api, 'by-process.txt', 'bytes');
    const { storage_key: key } = await resourceRow(env, file.id);
    await deleteFile(api, file.id);
    // Eventually: the purge by the worker process.
    expect(await waitFor(() => purged(file.id), 30_000, 200)).toBe(true);
    // Eventually: the content off the disk.
    expect(await waitFor(async () => !(await onDisk(env, key!)), 30_000, 200)).toBe(true);
  } finally {
    await stopWorker(worker);
  }
});
