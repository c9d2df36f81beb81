import { Queue, Worker } from 'bullmq';
import type { Config } from '../../shared/config';
import type { Db } from '../../shared/db/knex';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { ReservationRepository } from '../../shared/quota/reservation.repository';
import { TrashRepository } from '../../shared/db/repositories/trash.repository';
import { VersionRepository } from '../../shared/db/repositories/version.repository';
import { UploadReservations } from '../../shared/quota/upload.reservations';
import { VersionExpiry } from '../../shared/versions/version.expiry';
import { retentionMs, TrashPurger } from '../../shared/lifecycle/trash.purger';
import type { Logger } from '../../shared/logger';
import { RedisChangeNotifier } from '../../shared/queue/change.channel';
import {
  EXPIRE_UPLOADS_JOB,
  EXPIRE_VERSIONS_JOB,
  MAINTENANCE_JOB_OPTIONS,
  MAINTENANCE_QUEUE,
  PURGE_TRASH_JOB,
  purgeIntervalMs,
  SWEEP_THUMBNAILS_JOB,
  SWEEP_CRC32S_JOB,
  CRC32_SWEEP_MS,
  THUMBNAIL_SWEEP_MS,
  uploadExpirySweepMs,
  type MaintenanceJobData,
  type MaintenanceJobResult,
} from '../../shared/queue/maintenance.contract';
import { bullPrefix, closingWith, connectRedis } from '../../shared/redis/redis.connection';
import type { ContentStore, ResumableDataStore } from '../../shared/storage/content.store';
import { createContentStore } from '../../shared/storage/store.factory';
import { ChunkListRepository } from '../../shared/chunks/chunk-list.repository';
import { withChunkListCleanup } from '../../shared/chunks/chunk-lists.cleanup';
import { ThumbnailRepository } from '../../shared/thumbnails/thumbnail.repository';
import { ThumbnailSweeper } from '../../shared/thumbnails/thumbnail.sweeper';
import { ContentCrcRepository } from '../../shared/content/content-crc.repository';
import { ContentCrcSweeper } from '../../shared/content/content-crc.sweeper';

/** One scheduled housekeeping task: its job name (also its scheduler id), how often, and the work. */
export interface MaintenanceTask {
  name: string;
  everyMs: number;
  run(): Promise<MaintenanceJobResult>;
}

export interface MaintenanceWorkers {
  worker: Worker<MaintenanceJobData, MaintenanceJobResult>;
  close(): Promise<void>;
}

/** The tasks of this deployment. Another task is one more entry here and a job name in shared/queue/maintenance.contract.ts. */
export function maintenanceTasks(config: Config, contentStore: ContentStore, owners: OwnerTransactions, db: Db, logger: Logger): MaintenanceTask[] {
  // Removing content also removes its chunk list.
  const store = withChunkListCleanup(contentStore, new ChunkListRepository(db));
  const trash = new TrashRepository(db);
  const purger = new TrashPurger(owners, trash, store, logger);
  const retention = retentionMs(config.trashRetentionDays);
  const reservations = new UploadReservations(owners, new ReservationRepository(db), store);
  const versions = new VersionExpiry(owners, new VersionRepository(db), store, logger);
  const versionRetention = retentionMs(config.versionRetentionDays);
  const thumbnails = new ThumbnailSweeper(contentStore, new ThumbnailRepository(db), logger);
  const crcs = new ContentCrcSweeper(new ContentCrcRepository(db));
  let uploads: ResumableDataStore | undefined;
  return [
    {
      name: PURGE_TRASH_JOB,
      everyMs: purgeIntervalMs(retention),
      run: async () => ({ ...(await purger.purgeExpired(new Date(Date.now() - retention))) }),
    },
    {
      // Resumable uploads not finished within UPLOAD_EXPIRY_HOURS: their bytes and info leave the disk.
      name: EXPIRE_UPLOADS_JOB,
      everyMs: uploadExpirySweepMs(config.uploadExpiryMs),
      run: async () => {
        uploads ??= store.resumable.dataStore(config.uploadExpiryMs, async (id) => void (await reservations.release(id)));
        const uploadsRemoved = await uploads.deleteExpired();
        // Reservations outlive their uploads only after a crash; they end at the same age.
        return { uploadsRemoved, reservationsReleased: await reservations.expire(new Date(Date.now() - config.uploadExpiryMs)) };
      },
    },
    {
      // Versions replaced more than VERSION_RETENTION_DAYS ago, and beyond MAX_VERSIONS per file.
      name: EXPIRE_VERSIONS_JOB,
      everyMs: purgeIntervalMs(versionRetention),
      run: async () => ({ ...(await versions.run(new Date(Date.now() - versionRetention), config.maxVersions)) }),
    },
    {
      // Thumbnails of digests no file, trashed file or version has any more.
      name: SWEEP_THUMBNAILS_JOB,
      everyMs: THUMBNAIL_SWEEP_MS,
      run: async () => thumbnails.sweep(),
    },
    {
      // Recorded CRC-32s (for archives) of digests no file, trashed file or version has any more.
      name: SWEEP_CRC32S_JOB,
      everyMs: CRC32_SWEEP_MS,
      run: async () => crcs.sweep(),
    },
  ];
}

/**
 * Registers the schedulers (upsert: every worker does it at start-up, and the last one's settings
 * stand, without duplicates) and consumes the maintenance queue. A global concurrency of 1 keeps two
 * runs from overlapping across workers, though each task is safe to run twice at once anyway.
 */
export async function startMaintenance(
  config: Config,
  db: Db,
  logger: Logger,
  store: ContentStore = createContentStore(config),
): Promise<MaintenanceWorkers> {
  const notifier = new RedisChangeNotifier(config, config.queuePrefix, logger);
  const tasks = new Map(maintenanceTasks(config, store, new OwnerTransactions(db, notifier), db, logger).map((t) => [t.name, t]));
  const prefix = bullPrefix(config, config.queuePrefix);
  const queueConnection = connectRedis(config, 'blocking');
  const queue = closingWith(new Queue<MaintenanceJobData, MaintenanceJobResult>(MAINTENANCE_QUEUE, { connection: queueConnection, prefix }), queueConnection);
  try {
    await queue.setGlobalConcurrency(1);
    for (const task of tasks.values()) {
      await queue.upsertJobScheduler(task.name, { every: task.everyMs }, { name: task.name, data: {}, opts: MAINTENANCE_JOB_OPTIONS });
    }
  } finally {
    await queue.close();
  }
  const connection = connectRedis(config, 'blocking');
  const worker = closingWith(new Worker<MaintenanceJobData, MaintenanceJobResult>(
    MAINTENANCE_QUEUE,
    async (job) => {
      const task = tasks.get(job.name);
      if (!task) throw new Error(`unknown maintenance job ${job.name}`);
      const started = Date.now();
      const result = await task.run();
      // A run that found nothing to do is the common case; only runs that did something are news.
      const level = Object.values(result).some((n) => n > 0) ? 'info' : 'debug';
      logger[level]({ job: job.name, jobId: job.id, ...result, ms: Date.now() - started }, 'maintenance job done');
      return result;
    },
    { connection, prefix, concurrency: 1 },
  ), connection);
  worker.on('failed', (job, err) => logger.error({ job: job?.name, jobId: job?.id, err: err.message }, 'maintenance job failed'));
  worker.on('error', (err) => logger.warn({ err: err.message }, 'maintenance worker connection error'));
  await worker.waitUntilReady();
  return {
    worker,
    async close() {
      await worker.close();
      notifier.close();
    },
  };
}
