import { ConfigError, loadConfig } from '../../shared/config';
import { createDb } from '../../shared/db/knex';
import { migrateToLatest } from '../../shared/db/migrate';
import { createLogger } from '../../shared/logger';
import { startMaintenance } from './maintenance.workers';
import { startOpsServer } from './ops.server';
import { startSyncWorkers } from './sync.workers';
import { WorkerMetrics } from './worker.metrics';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('worker', config.logLevel);
  await migrateToLatest(config.databaseUrl);
  const db = createDb(config.databaseUrl, { max: Math.min(config.syncShards, 20) });
  const sync = await startSyncWorkers(config, db, logger);
  const maintenance = await startMaintenance(config, db, logger);
  const metrics = new WorkerMetrics();
  metrics.observe(sync.workers);
  const ops = await startOpsServer(config.workerPort, db, sync.workers, logger, metrics.registry);
  logger.info({ shards: config.syncShards, prefix: config.queuePrefix }, 'worker ready');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker stopping: finishing the batch in progress');
    // close() waits for the active job, so a batch in progress completes and reports its result.
    await Promise.all([sync.close(), maintenance.close()]);
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
