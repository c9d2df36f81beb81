import { Queue, Worker } from 'bullmq';
import { ConfigError, loadConfig } from '../../shared/config';
import { createDb } from '../../shared/db/knex';
import { migrateToLatest } from '../../shared/db/migrate';
import { createLogger } from '../../shared/logger';
import { redisOptions, syncQueueNames, type SyncJobData, type SyncJobResult } from '../../shared/queue/sync.contract';
import { BatchApplier } from './batch.applier';
import { startOpsServer } from './ops.server';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('worker', config.logLevel);
  await migrateToLatest(config.databaseUrl);
  const db = createDb(config.databaseUrl, { max: Math.min(config.syncShards, 20) });
  const applier = new BatchApplier(db);
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
  const ops = await startOpsServer(config.workerPort, db, workers, logger);
  logger.info({ shards: config.syncShards, prefix: config.queuePrefix }, 'worker ready');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker stopping: finishing the batch in progress');
    // close() waits for the active job, so a batch in progress completes and reports its result.
    await Promise.allSettled(workers.map((w) => w.close()));
    await Promise.allSettled([db.destroy(), ops?.close()]);
    logger.info('worker stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  console.error(err instanceof ConfigError ? `filesync worker: ${message}` : `filesync worker: failed to start: ${message}`);
  process.exit(1);
});
