import { createDb, ensureDatabase, type Db } from './knex';
import { migrationSource } from './migrations';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function migrateDb(db: Db): Promise<void> {
  await db.migrate.latest({ migrationSource, tableName: 'knex_migrations' });
}

/**
 * Creates the database when missing and applies pending migrations. Gateways and workers all call
 * it at start-up; when another process holds the migration lock (or is creating the bookkeeping
 * tables at the same moment) it waits and tries again.
 */
export async function migrateToLatest(url: string, attempts = 60): Promise<void> {
  await ensureDatabase(url);
  const db = createDb(url, { max: 2 });
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await migrateDb(db);
        return;
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        const contended = /already locked|already exists|Duplicate entry|Deadlock/i.test(message);
        if (!contended || attempt >= attempts) throw err;
        await sleep(500);
      }
    }
  } finally {
    await db.destroy();
  }
}
