import type { Server } from 'node:http';
import type { Config } from '../../shared/config';
import { claimStore } from '../../shared/content/store.identity';
import { createDb, type Db } from '../../shared/db/knex';
import { ContentRepository } from '../../shared/db/repositories/content.repository';
import type { Logger } from '../../shared/logger';
import type { ContentStore } from '../../shared/storage/content.store';
import { createContentStore } from '../../shared/storage/store.factory';
import type { BatchObserver } from './inbox.applier';
import { startMaintenance, type MaintenanceWorkers } from './maintenance.workers';
import { startMonitoringServer } from './monitoring.server';
import { startSyncWorkers, type SyncWorkers } from './sync.workers';
import { startBackground, type BackgroundWorkers } from './background.workers';
import { WorkerMetrics } from './worker.metrics';
import { workerSession } from './worker.session';

export interface WorkerOptions {
  config: Config;
  logger: Logger;
  /** The content store instead of the one the configuration names (a test that wraps it). */
  store?: ContentStore;
  /** Told of every batch the worker commits, besides the metrics. */
  observe?: BatchObserver;
  /** Runs the scheduled maintenance (purges, expiries); true unless a test runs its own. */
  maintenance?: boolean;
  /** The port of /healthz, /readyz and /metrics instead of WORKER_PORT; 0 lets the OS pick one, null: none. */
  monitoringPort?: number | null;
}

export interface OpenWorker {
  /** The worker's own pool, every connection under the session limits of worker.session.ts. */
  db: Db;
  store: ContentStore;
  sync: SyncWorkers;
  maintenance: MaintenanceWorkers | undefined;
  /** Thumbnails and chunk lists, in the background process where it is built. */
  background: BackgroundWorkers;
  metrics: WorkerMetrics;
  /** The monitoring endpoints, when they could listen. */
  monitoring: Server | undefined;
  /**
   * Lets the batches in progress finish within `deadlineMs`; resolves true when they did, and then
   * closes everything openWorker opened, the pool included. Past the deadline the pool stays open:
   * the process is expected to exit, and MySQL rolls back what did not commit.
   */
  close(deadlineMs?: number): Promise<boolean>;
}

/** The worker's pool: one connection per ring in progress, one for the sweeper, one for failing a batch, one for maintenance, one per thumbnail job, one for the chunk-list job. */
export function openWorkerDb(config: Config): Db {
  return createDb(config.databaseUrl, {
    max: config.syncConcurrency + 4 + config.thumbnailConcurrency,
    multipleStatements: true,
    session: workerSession({ lockWaitS: config.syncLockWaitS, deadlineMs: config.syncBatchDeadlineMs }),
  });
}

/**
 * The worker as main.ts runs it: its pool under the session limits, the store claimed for this
 * database, the sync workers (with the per-user turns), the scheduled maintenance, the metrics and the
 * monitoring endpoints. The tests open their in-process workers here too, so whatever is wired here
 * reaches them.
 */
export async function openWorker(options: WorkerOptions): Promise<OpenWorker> {
  const { config, logger } = options;
  const db = openWorkerDb(config);
  try {
    // Before the maintenance jobs purge or expire anything: refuses to start on a store that is not the database's.
    const store = options.store ?? createContentStore(config);
    await claimStore(store, new ContentRepository(db));
    const metrics = new WorkerMetrics();
    const { observe } = options;
    const recorded: BatchObserver = observe
      ? (result, ms) => {
          metrics.recordApplied(result, ms);
          observe(result, ms);
        }
      : metrics.recordApplied;
    const sync = await startSyncWorkers(config, db, logger, recorded);
    const maintenance = options.maintenance === false ? undefined : await startMaintenance(config, db, logger, store);
    const background = await startBackground(config, db, logger, store, options.store !== undefined);
    metrics.observe(sync.workers);
    const port = options.monitoringPort === undefined ? config.workerPort : options.monitoringPort;
    const monitoring = port === null ? undefined : await startMonitoringServer(port, db, sync.workers, logger, metrics.registry, config.host);
    logger.info({ concurrency: config.syncConcurrency, prefix: config.queuePrefix }, 'worker ready');
    return {
      db,
      store,
      sync,
      maintenance,
      background,
      metrics,
      monitoring,
      async close(deadlineMs = Number.POSITIVE_INFINITY) {
        const deadline = Number.isFinite(deadlineMs) ? new Promise((resolve) => setTimeout(resolve, deadlineMs).unref()) : new Promise(() => undefined);
        const [finished] = await Promise.all([sync.close(deadlineMs), Promise.race([Promise.all([maintenance?.close(), background.close()]), deadline])]);
        if (!finished) return false;
        const closing = Promise.allSettled([db.destroy(), new Promise((resolve) => (monitoring ? monitoring.close(resolve) : resolve(undefined)))]);
        await Promise.race([closing, new Promise((resolve) => setTimeout(resolve, 300).unref())]);
        return true;
      },
    };
  } catch (err) {
    await db.destroy().catch(() => undefined);
    throw err;
  }
}
