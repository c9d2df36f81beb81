import { ConfigError, loadConfig } from '../../shared/config';
import { migrateToLatest } from '../../shared/db/migrations/migrate';
import { createLogger } from '../../shared/logger';
import { StoreMismatchError } from '../../shared/content/store.identity';
import { openWorker } from './open.worker';

async function main(): Promise<void> {
  const config = loadConfig(process.env, 'worker');
  const logger = createLogger('worker', config.logLevel);
  await migrateToLatest(config.databaseUrl);
  const worker = await openWorker({ config, logger });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker stopping: finishing the batches in progress');
    // Rings in progress may finish within SHUTDOWN_TIMEOUT_MS (less a margin to exit). Past it the
    // process exits anyway: MySQL rolls back what did not commit and the batches stay pending for
    // another worker, whose sweeper rings them again.
    const finished = await worker.close(Math.max(0, config.shutdownTimeoutMs - 500));
    if (!finished) logger.warn('batches were still running at the shutdown deadline; they roll back and stay pending');
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
