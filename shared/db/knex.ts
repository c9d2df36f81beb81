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

export function createDb(url: string, pool: { min?: number; max?: number } = {}): Db {
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
    },
    pool: {
      min: pool.min ?? 0,
      max: pool.max ?? 10,
      afterCreate(conn: { query: (sql: string, cb: (err: Error | null) => void) => void }, done: (err: Error | null, c: unknown) => void) {
        conn.query(
          "SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'",
          (err) => {
            if (err) return done(err, conn);
            // Writers lock the owner's row first and then must see what the previous holder
            // committed; set once per connection rather than once per transaction.
            conn.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED', (e) => done(e, conn));
          },
        );
      },
    },
    acquireConnectionTimeout: 10000,
  });
}
