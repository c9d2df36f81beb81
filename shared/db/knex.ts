import knexFactory, { type Knex } from 'knex';
import mysql from 'mysql2/promise';

export type Db = Knex;

interface MysqlTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

export function parseDatabaseUrl(url: string): MysqlTarget {
  const u = new URL(url);
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]{1,64}$/.test(database)) {
    throw new Error('DATABASE_URL must name a database of letters, digits and underscores');
  }
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password),
    database,
  };
}

/** Creates the database named in the URL when it does not exist yet. */
export async function ensureDatabase(url: string): Promise<void> {
  const { database, ...server } = parseDatabaseUrl(url);
  const conn = await mysql.createConnection({ ...server, connectTimeout: 5000 });
  try {
    await conn.query(`CREATE DATABASE IF NOT EXISTS \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  } finally {
    await conn.end();
  }
}

export interface PoolOptions {
  min?: number;
  max?: number;
  /** Extra SET statements for every new connection, chosen from the server's VERSION() string. */
  session?: (serverVersion: string) => string[];
  /** How long a query waits for a free connection before it fails (default 10 s). */
  acquireTimeoutMs?: number;
  /**
   * Lets one query carry several statements: for the pools owner transactions run on, which send
   * their last writes in one round trip (statement.batch.ts). Every statement of the service takes
   * its values as bindings, never as text, so no value can add one. Off by default.
   */
  multipleStatements?: boolean;
}

type RawConnection = { query: (sql: string, cb: (err: Error | null, rows?: unknown) => void) => void };

/** Runs the statements one after the other on a connection being set up. */
function runAll(conn: RawConnection, statements: string[], done: (err: Error | null) => void): void {
  const [first, ...rest] = statements;
  if (first === undefined) return done(null);
  conn.query(first, (err) => (err ? done(err) : runAll(conn, rest, done)));
}

export function createDb(url: string, pool: PoolOptions = {}): Db {
  const target = parseDatabaseUrl(url);
  return knexFactory({
    client: 'mysql2',
    connection: {
      ...target,
      charset: 'utf8mb4',
      // Every DATETIME is UTC, on the wire and in the session.
      timezone: 'Z',
      // BIGINT columns (operation ids, sizes) come back as exact decimal strings.
      supportBigNumbers: true,
      bigNumberStrings: true,
      connectTimeout: 5000,
      multipleStatements: pool.multipleStatements ?? false,
    },
    pool: {
      min: pool.min ?? 0,
      max: pool.max ?? 10,
      afterCreate(conn: RawConnection, done: (err: Error | null, c: unknown) => void) {
        const base = [
          "SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'",
          // Writers lock the owner's row first and then must see what the previous holder
          // committed; set once per connection rather than once per transaction.
          'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED',
        ];
        runAll(conn, base, (err) => {
          if (err || !pool.session) return done(err, conn);
          const session = pool.session;
          conn.query('SELECT VERSION() AS v', (e, rows) => {
            if (e) return done(e, conn);
            const version = String((rows as { v: string }[])[0]?.v ?? '');
            runAll(conn, session(version), (e2) => done(e2, conn));
          });
        });
      },
    },
    acquireConnectionTimeout: pool.acquireTimeoutMs ?? 10000,
  });
}

/** Whether the pool behind `db` (or a transaction's) lets one query carry several statements. */
export function allowsMultipleStatements(db: Knex | Knex.Transaction): boolean {
  const connection = (db.client as { config?: { connection?: { multipleStatements?: boolean } } }).config?.connection;
  return connection?.multipleStatements === true;
}

/** Whether MySQL answers a trivial statement now (the readiness checks of the gateway and the worker). */
export function databaseAnswers(db: Db): Promise<boolean> {
  return db.raw('SELECT 1').then(
    () => true,
    () => false,
  );
}
