import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from '../../shared/config';
import { createDb } from '../../shared/db/knex';
import { migrateToLatest } from '../../shared/db/migrate';
import { createLogger } from '../../shared/logger';
import { buildGateway } from './app';
import { ensureInitialAdmin, resolveJwtSecret, StartupError } from './bootstrap';
import { GracefulServer } from './http/graceful.server';
import { ChangeHub } from './changes/change.hub';
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
  const changes = new ChangeHub(
    config.redisUrl,
    config.queuePrefix,
    { maxHeld: config.feedMaxHeld, maxPerUser: config.feedMaxHeldPerUser },
    logger,
  );
  const { app, hasher, storage, uploads } = buildGateway({ config, jwtSecret, db, sync, changes, logger });
  if ((await ensureInitialAdmin(config, db, hasher)) === 'created') logger.info('initial administrator created');
  await Promise.all([hasher.warmUp(), sync.ready(), changes.ready(), uploads.ready(), storage.sweep(24 * 3600 * 1000)]);

  // The bound port, not the configured one: with PORT=0 (tests, side-by-side runs) the OS picks it.
  const server: Server = app.listen(config.port, () => logger.info({ port: (server.address() as AddressInfo).port }, 'gateway listening'));
  server.keepAliveTimeout = 65_000;
  const graceful = new GracefulServer(server);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'gateway stopping: finishing requests in flight');
    // Held change-feed requests are answered now rather than at the end of their wait.
    void changes.close();
    void graceful.close(config.shutdownTimeoutMs).then(async (outcome) => {
      if (outcome === 'forced') logger.warn('requests were still in flight at the shutdown deadline; they were cut');
      await Promise.allSettled([sync.close(), uploads.close(), db.destroy()]);
      logger.info('gateway stopped');
      process.exit(0);
    });
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
