import { Queue, Worker } from 'bullmq';
import type { Config } from '../../shared/config';
import type { Db } from '../../shared/db/knex';
import type { Logger } from '../../shared/logger';
import { bullPrefix, closingWith, connectRedis } from '../../shared/redis/redis.connection';
import { SYNC_QUEUE_NAME, type RingJobData, type RingResult } from '../../shared/queue/ring.contract';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { RedisChangeNotifier } from '../../shared/queue/change.channel';
import { InboxApplier, type BatchObserver } from './inbox.applier';
import { InboxSweeper } from './inbox.sweeper';
import { RingTurns } from './ring.turns';

export interface SyncWorkers {
  workers: Worker<RingJobData, RingResult>[];
  sweeper: InboxSweeper;
  /**
   * Stops taking rings and waits for the ones in progress, at most `timeoutMs`; returns whether they
   * all finished. Whatever has not committed by then rolls back when the process exits, and its
   * batches stay pending for another worker.
   */
  close(timeoutMs?: number): Promise<boolean>;
}

/** How often pending batches are looked for, and how old a pending batch is before it is rung again. */
export const SWEEP_INTERVAL_MS = 1000;
export const SWEEP_STALE_MS = 2000;
const RETENTION_MS = 24 * 3600 * 1000;

/**
 * The sync worker: one BullMQ queue, `SYNC_CONCURRENCY` rings at a time in this process (at most
 * `USER_WRITE_CONCURRENCY` of them of one user, see RingTurns), any number of processes. Order comes
 * from MySQL (see InboxApplier), so no global concurrency is needed.
 */
export async function startSyncWorkers(config: Config, db: Db, logger: Logger, observe?: BatchObserver): Promise<SyncWorkers> {
  const publisher = connectRedis(config, 'producer');
  publisher.on('error', (err) => logger.debug({ err: err.message }, 'redis publisher connection error'));
  const notifier = new RedisChangeNotifier(config, config.queuePrefix, logger);
  const applier = new InboxApplier(
    db,
    new OwnerTransactions(db, notifier),
    publisher,
    { databaseUrl: config.databaseUrl, queuePrefix: config.queuePrefix, deadlineMs: config.syncBatchDeadlineMs, slowLogMs: 3000 },
    logger,
    observe,
  );
  const prefix = bullPrefix(config, config.queuePrefix);
  const connection = connectRedis(config, 'blocking');
  const turns = new RingTurns(config.userWriteConcurrency);
  const worker = closingWith(new Worker<RingJobData, RingResult>(
    SYNC_QUEUE_NAME,
    turns.wrap((job) => applier.ring(job.data, logger.child({ requestId: job.data.requestId, jobId: job.id, deviceId: job.data.deviceId }))),
    {
      connection,
      prefix,
      concurrency: config.syncConcurrency,
      // A dead or frozen worker's rings are taken over after about this long.
      lockDuration: config.syncLockMs,
      stalledInterval: config.syncLockMs,
      maxStalledCount: 2,
      // Idle workers look for rings every second even when a wake-up went to a frozen worker.
      drainDelay: 1,
    },
  ), connection);
  worker.on('failed', (job, err) => logger.warn({ jobId: job?.id, requestId: job?.data.requestId, err: err.message }, 'sync ring failed; its batches stay pending'));
  worker.on('error', (err) => logger.warn({ err: err.message }, 'worker connection error'));
  const queue = new Queue<RingJobData, RingResult>(SYNC_QUEUE_NAME, { connection: publisher, prefix });
  queue.on('error', (err) => logger.debug({ err: err.message }, 'sweeper queue error'));
  const sweeper = new InboxSweeper(db, queue, { intervalMs: SWEEP_INTERVAL_MS, staleMs: SWEEP_STALE_MS, retentionMs: RETENTION_MS }, logger);
  await worker.waitUntilReady();
  sweeper.start();
  return {
    workers: [worker],
    sweeper,
    async close(timeoutMs = Number.POSITIVE_INFINITY) {
      sweeper.stop();
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<false>((resolve) => {
        if (Number.isFinite(timeoutMs)) timer = setTimeout(() => resolve(false), timeoutMs);
      });
      const finished = await Promise.race([worker.close().then(() => true), timedOut]);
      clearTimeout(timer);
      if (finished) {
        await queue.close().catch(() => undefined);
        publisher.disconnect();
        notifier.close();
      }
      return finished;
    },
  };
}
