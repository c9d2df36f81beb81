import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from '../../shared/config';
import { ContentRepository } from '../../shared/db/repositories/content.repository';
import { createDb } from '../../shared/db/knex';
import { migrateToLatest } from '../../shared/db/migrations/migrate';
import { createLogger } from '../../shared/logger';
import { createContentStore } from '../../shared/storage/store.factory';
import { claimStore, StoreMismatchError } from '../../shared/storage/store.identity';
import { openMaintenanceQueue } from '../../shared/queue/maintenance.contract';
import { buildGateway } from './app';
import { ensureInitialAdmin, resolveJwtSecret, StartupError } from './bootstrap';
import { GracefulServer } from './http/graceful.server';
import { ChangeHub } from './changes/change.hub';
import { createHttpServer, listen } from './http/http.server';
import { BatchSubmitter } from './sync/batch.submitter';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('gateway', config.logLevel);
  await migrateToLatest(config.databaseUrl);
  const db = createDb(config.databaseUrl, { max: 20 });
  // Before anything reads or writes content: refuses to start on a store that is not the database's.
  const store = createContentStore(config);
  await claimStore(store, new ContentRepository(db));
  const jwtSecret = await resolveJwtSecret(config);
  const sync = new BatchSubmitter(
    { redis: config, prefix: config.queuePrefix, timeoutMs: config.syncTimeoutMs, db },
    logger,
  );
  const changes = new ChangeHub(
    config,
    config.queuePrefix,
    { maxHeld: config.feedMaxHeld, maxPerUser: config.feedMaxHeldPerUser },
    logger,
  );
  const maintenance = openMaintenanceQueue(config, config.queuePrefix);
  const gateway = buildGateway({ config, jwtSecret, db, sync, changes, logger, opsQueues: [maintenance], store });
  const { hasher, storage } = gateway;
  if ((await ensureInitialAdmin(config, db, hasher)) === 'created') logger.info('initial administrator created');
  await Promise.all([hasher.warmUp(), sync.ready(), changes.ready(), gateway.uploads.ready(), gateway.principals.ready(), storage.sweep(24 * 3600 * 1000)]);

  // The bound port, not the configured one: with PORT=0 (tests, side-by-side runs) the OS picks it.
  const server = createHttpServer(gateway.app);
  const graceful = new GracefulServer(server);
  await listen(server, config.port);
  logger.info({ port: (server.address() as AddressInfo).port }, 'gateway listening');

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'gateway stopping: finishing requests in flight');
    // Held change-feed requests are answered now rather than at the end of their wait.
    void changes.close();
    void graceful.close(config.shutdownTimeoutMs).then(async (outcome) => {
      if (outcome === 'forced') logger.warn('requests were still in flight at the shutdown deadline; they were cut');
      // Uploads cut by the deadline may still be writing their staging files; none may stay behind.
      const stopped = await storage.removeInFlight();
      if (stopped > 0) logger.info({ uploads: stopped }, 'removed the staging files of uploads that did not finish');
      await Promise.allSettled([sync.close(), maintenance.close(), db.destroy(), gateway.close()]);
      logger.info('gateway stopped');
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof StartupError || err instanceof StoreMismatchError) {
    console.error(`filesync gateway: ${err.message}`);
  } else {
    console.error(`filesync gateway: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  }
  process.exit(1);
});
