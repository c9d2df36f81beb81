import { Queue, Worker } from 'bullmq';
import type { Config } from '../../shared/config';
import type { Db } from '../../shared/db/knex';
import type { Logger } from '../../shared/logger';
import { redisOptions, syncQueueNames, type SyncJobData, type SyncJobResult } from '../../shared/queue/sync.contract';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { RedisChangeNotifier } from '../../shared/queue/change.channel';
import { BatchApplier } from './batch.applier';

export interface SyncWorkers {
  workers: Worker<SyncJobData, SyncJobResult>[];
  /** Waits for the batch in progress on each shard, then stops taking new ones. */
  close(): Promise<void>;
}

/** One BullMQ worker per shard queue; each queue allows one active batch across every process. */
export async function startSyncWorkers(config: Config, db: Db, logger: Logger): Promise<SyncWorkers> {
  const notifier = new RedisChangeNotifier(config.redisUrl, config.queuePrefix, logger);
  const applier = new BatchApplier(new OwnerTransactions(db, notifier));
  const connection = redisOptions(config.redisUrl, 'blocking');
  const workers: Worker<SyncJobData, SyncJobResult>[] = [];
  for (const name of syncQueueNames(config.syncShards)) {
    // One active batch per shard across every worker process: this is what orders a device's batches.
    const queue = new Queue(name, { connection, prefix: config.queuePrefix });
    await queue.setGlobalConcurrency(1);
    await queue.close();
    const worker = new Worker<SyncJobData, SyncJobResult>(
      name,
      async (job) => {
        const log = logger.child({ requestId: job.data.requestId, jobId: job.id, queue: name, deviceId: job.data.deviceId });
        const started = Date.now();
        const result = await applier.apply(job.data);
        log.info(
          { applied: result.applied.length, failed: result.failed?.error.code ?? null, ms: Date.now() - started },
          'sync batch applied',
        );
        return result;
      },
      {
        connection,
        prefix: config.queuePrefix,
        concurrency: 1,
        lockDuration: config.syncLockMs,
        stalledInterval: config.syncLockMs,
        maxStalledCount: 1,
      },
    );
    worker.on('failed', (job, err) => logger.error({ jobId: job?.id, requestId: job?.data.requestId, err: err.message }, 'sync batch failed'));
    worker.on('error', (err) => logger.warn({ err: err.message }, 'worker connection error'));
    workers.push(worker);
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  return {
    workers,
    async close() {
      await Promise.allSettled(workers.map((w) => w.close()));
      notifier.close();
    },
  };
}
