import { ConfigError, loadConfig } from '../../shared/config';
import { createDb } from '../../shared/db/knex';
import { migrateToLatest } from '../../shared/db/migrations/migrate';
import { createLogger } from '../../shared/logger';
import { StoreMismatchError } from '../../shared/content/store.identity';
import { administratorName, StartupError } from './bootstrap';
import { openGateway } from './open.gateway';

async function main(): Promise<void> {
  const config = loadConfig(process.env, 'gateway');
  const logger = createLogger('gateway', config.logLevel);
  await migrateToLatest(config.databaseUrl);
  const db = createDb(config.databaseUrl, { max: 20, multipleStatements: true });
  const gateway = await openGateway({ config, db, logger });
  // For the person at the terminal, beside the JSON logs: where to go and whom to sign in as (never the password).
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const admin = await administratorName(config, db);
  console.log(`filesync listening on http://${host}:${gateway.port}${admin ? ` (administrator: ${admin})` : ''}`);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'gateway stopping: finishing requests in flight');
    void gateway.close(config.shutdownTimeoutMs).then(async ({ outcome, unfinishedUploads }) => {
      if (outcome === 'forced') logger.warn('requests were still in flight at the shutdown deadline; they were cut');
      if (unfinishedUploads > 0) logger.info({ uploads: unfinishedUploads }, 'removed the staging files of uploads that did not finish');
      await db.destroy().catch(() => undefined);
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
