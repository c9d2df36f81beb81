import { promises as fs } from 'node:fs';
import { Queue, Worker } from 'bullmq';
import type { Config } from '../../shared/config';
import type { Logger } from '../../shared/logger';
import { redisOptions } from '../../shared/queue/sync.contract';
import {
  UPLOAD_EXPIRY_JOB_NAME,
  UPLOAD_EXPIRY_JOB_OPTIONS,
  UPLOAD_EXPIRY_QUEUE,
  UPLOAD_EXPIRY_SCHEDULER_ID,
  uploadExpirySweepMs,
  type UploadExpiryJobData,
  type UploadExpiryJobResult,
} from '../../shared/queue/upload-expiry.contract';
import { TusStore, tusDirectory } from '../../shared/uploads/tus.store';

export interface UploadExpiryWorker {
  worker: Worker<UploadExpiryJobData, UploadExpiryJobResult>;
  close(): Promise<void>;
}

/**
 * Schedules and runs the removal of expired resumable uploads. Needs the upload directory the
 * gateways write (a shared volume when they run elsewhere). The sweep is idempotent, so two workers
 * running it at once, or a run repeated after a crash, remove nothing twice.
 */
export async function startUploadExpiry(config: Config, logger: Logger): Promise<UploadExpiryWorker> {
  const connection = redisOptions(config.redisUrl, 'blocking');
  const queue = new Queue<UploadExpiryJobData, UploadExpiryJobResult>(UPLOAD_EXPIRY_QUEUE, { connection, prefix: config.queuePrefix });
  await queue.upsertJobScheduler(
    UPLOAD_EXPIRY_SCHEDULER_ID,
    { every: uploadExpirySweepMs(config.uploadExpiryMs) },
    { name: UPLOAD_EXPIRY_JOB_NAME, data: {}, opts: UPLOAD_EXPIRY_JOB_OPTIONS },
  );
  await queue.close();

  let store: TusStore | undefined;
  const worker = new Worker<UploadExpiryJobData, UploadExpiryJobResult>(
    UPLOAD_EXPIRY_QUEUE,
    async () => {
      // The store is made once its folder is known to exist: its constructor creates the folder
      // without a way to report failure, and a missing volume should fail a job, not the process.
      if (!store) {
        await fs.mkdir(tusDirectory(config.uploadDir), { recursive: true });
        store = new TusStore(config.uploadDir, config.uploadExpiryMs);
      }
      const removed = await store.deleteExpired();
      if (removed > 0) logger.info({ removed }, 'expired uploads removed');
      return { removed };
    },
    { connection, prefix: config.queuePrefix, concurrency: 1 },
  );
  worker.on('failed', (_job, err) => logger.error({ err: err.message }, 'removing expired uploads failed'));
  worker.on('error', (err) => logger.warn({ err: err.message }, 'upload expiry worker connection error'));
  await worker.waitUntilReady();
  return {
    worker,
    async close() {
      await worker.close();
    },
  };
}
