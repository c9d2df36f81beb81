import { ConfigError, loadConfig } from '../../shared/config';
import { ContentRepository } from '../../shared/db/repositories/content.repository';
import { createDb } from '../../shared/db/knex';
import { migrateToLatest } from '../../shared/db/migrations/migrate';
import { createLogger } from '../../shared/logger';
import { createContentStore } from '../../shared/storage/store.factory';
import { claimStore, StoreMismatchError } from '../../shared/content/store.identity';
import { startMaintenance } from './maintenance.workers';
import { startOpsServer } from './ops.server';
import { startSyncWorkers } from './sync.workers';
import { WorkerMetrics } from './worker.metrics';
import { workerSession } from './worker.session';

async function main(): Promise<void> {
  const config = loadConfig(process.env, 'worker');
  const logger = createLogger('worker', config.logLevel);
  await migrateToLatest(config.databaseUrl);
  // One connection per ring in progress, one for the sweeper, one for failing a batch, one for maintenance.
  const db = createDb(config.databaseUrl, {
    max: config.syncConcurrency + 3,
    session: workerSession({ lockWaitS: config.syncLockWaitS, deadlineMs: config.syncBatchDeadlineMs }),
  });
  // Before the maintenance jobs purge or expire anything: refuses to start on a store that is not the database's.
  const store = createContentStore(config);
  await claimStore(store, new ContentRepository(db));
  const metrics = new WorkerMetrics();
  const sync = await startSyncWorkers(config, db, logger, metrics.recordApplied);
  const maintenance = await startMaintenance(config, db, logger, store);
  metrics.observe(sync.workers);
  const ops = await startOpsServer(config.workerPort, db, sync.workers, logger, metrics.registry, config.host);
  logger.info({ concurrency: config.syncConcurrency, prefix: config.queuePrefix }, 'worker ready');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker stopping: finishing the batches in progress');
    // Rings in progress may finish within SHUTDOWN_TIMEOUT_MS (less a margin to exit). Past it the
    // process exits anyway: MySQL rolls back what did not commit and the batches stay pending for
    // another worker, whose sweeper rings them again.
    const deadline = Math.max(0, config.shutdownTimeoutMs - 500);
    const [finished] = await Promise.all([
      sync.close(deadline),
      Promise.race([maintenance.close(), new Promise((r) => setTimeout(r, deadline))]),
    ]);
    if (!finished) logger.warn('batches were still running at the shutdown deadline; they roll back and stay pending');
    else await Promise.race([Promise.allSettled([db.destroy(), ops?.close()]), new Promise((r) => setTimeout(r, 300))]);
    logger.info('worker stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  const known = err instanceof ConfigError || err instanceof StoreMismatchError;
  console.error(known ? `filesync worker: ${message}` : `filesync worker: failed to start: ${message}`);
  process.exit(1);
});
