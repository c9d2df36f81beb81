import { createDb, ensureDatabase, parseDatabaseUrl, type Db } from '../knex';
import { migrationSource } from '.';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long one GET_LOCK call waits before it is asked again (the total wait is bounded by `attempts`). */
const LOCK_WAIT_S = 5;

async function migrateDb(db: Db): Promise<void> {
  await db.migrate.latest({ migrationSource, tableName: 'knex_migrations' });
}

/**
 * Holds the database's migration lock (a MySQL named lock, one per database) while `work` runs. The
 * processes that start together (`npm start` runs a gateway and a worker) queue here: one migrates,
 * the others wait for it and then find nothing left to do, so none of them meets knex's own lock and
 * its "Can't take lock to run migrations" warning. The named lock belongs to a session: a process
 * that dies releases it with its connection.
 */
async function withMigrationLock(db: Db, database: string, attempts: number, work: () => Promise<void>): Promise<void> {
  const name = `filesync-migrate:${database}`.slice(0, 64);
  const connection = await db.client.acquireConnection();
  try {
    for (let attempt = 1; ; attempt++) {
      const [rows] = (await db.raw('SELECT GET_LOCK(?, ?) AS granted', [name, LOCK_WAIT_S]).connection(connection)) as [Array<{ granted: number | null }>];
      if (Number(rows[0]?.granted) === 1) break;
      if (attempt >= attempts) throw new Error(`another process has been migrating ${database} for too long`);
    }
    try {
      await work();
    } finally {
      await db.raw('SELECT RELEASE_LOCK(?)', [name]).connection(connection);
    }
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/**
 * Creates the database when missing and applies pending migrations. Gateways and workers all call
 * it at start-up; one at a time migrates (withMigrationLock), and should knex's own lock or its
 * bookkeeping tables still be contended (a process of an older version), it waits and tries again.
 */
export async function migrateToLatest(url: string, attempts = 60): Promise<void> {
  await ensureDatabase(url);
  // One connection holds the named lock, the others run the migrations.
  const db = createDb(url, { max: 3 });
  try {
    await withMigrationLock(db, parseDatabaseUrl(url).database, attempts, async () => {
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
    });
  } finally {
    await db.destroy();
  }
}
