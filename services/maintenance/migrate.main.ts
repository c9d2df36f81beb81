import { ConfigError, loadConfig } from '../../shared/config';
import { migrateToLatest } from '../../shared/db/migrations/migrate';

async function main(): Promise<void> {
  const config = loadConfig();
  await migrateToLatest(config.databaseUrl);
  console.log('migrations applied');
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  console.error(err instanceof ConfigError ? message : `migration failed: ${message}`);
  process.exit(1);
});
