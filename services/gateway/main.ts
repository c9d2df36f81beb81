import type { Server } from 'node:http';
import { ConfigError, loadConfig } from '../../shared/config';
import { createDb } from '../../shared/db/knex';
import { migrateToLatest } from '../../shared/db/migrate';
import { createLogger } from '../../shared/logger';
import { buildGateway } from './app';
import { ensureInitialAdmin, resolveJwtSecret, StartupError } from './bootstrap';
import { SyncClient } from './sync/sync.client';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('gateway', config.logLevel);
  await migrateToLatest(config.databaseUrl);
  const db = createDb(config.databaseUrl, { max: 20 });
  const jwtSecret = await resolveJwtSecret(config);
  const sync = new SyncClient(
    { redisUrl: config.redisUrl, prefix: config.queuePrefix, shards: config.syncShards, timeoutMs: config.syncTimeoutMs },
    logger,
  );
  const { app, hasher, storage } = buildGateway({ config, jwtSecret, db, sync, logger });
  if ((await ensureInitialAdmin(config, db, hasher)) === 'created') logger.info('initial administrator created');
  await Promise.all([hasher.warmUp(), sync.ready(), storage.sweep(24 * 3600 * 1000)]);

  const server: Server = app.listen(config.port, () => logger.info({ port: config.port }, 'gateway listening'));
  server.keepAliveTimeout = 65_000;

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'gateway stopping: finishing requests in flight');
    const force = setTimeout(() => {
      logger.warn('requests still in flight at the shutdown deadline; closing them');
      server.closeAllConnections();
    }, config.shutdownTimeoutMs);
    force.unref();
    server.close(async () => {
      await Promise.allSettled([sync.close(), db.destroy()]);
      logger.info('gateway stopped');
      process.exit(0);
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof StartupError) {
    console.error(`filesync gateway: ${err.message}`);
  } else {
    console.error(`filesync gateway: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  }
  process.exit(1);
});
