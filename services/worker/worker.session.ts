import mysql from 'mysql2/promise';
import { parseDatabaseUrl } from '../../shared/db/knex';

export interface SessionLimits {
  /** innodb_lock_wait_timeout, seconds. */
  lockWaitS: number;
  /** The batch deadline, milliseconds: no statement and no idle open transaction outlives it. */
  deadlineMs: number;
}

/**
 * The bounds every worker connection runs under. Lock waits end after `lockWaitS` on both servers.
 * MariaDB also bounds every statement (max_statement_time) and kills a connection left idle inside a
 * transaction (idle_transaction_timeout), which is what frees the locks of a frozen worker. MySQL 8
 * bounds only SELECTs (max_execution_time) and has no idle-transaction limit: there a frozen worker
 * holds its locks until its connection dies (see docs/OPERATIONS.md).
 */
export function workerSession(limits: SessionLimits): (serverVersion: string) => string[] {
  const seconds = Math.max(1, Math.ceil(limits.deadlineMs / 1000));
  return (version) => {
    const statements = [`SET SESSION innodb_lock_wait_timeout = ${Math.floor(limits.lockWaitS)}`];
    if (/mariadb/i.test(version)) {
      statements.push(`SET SESSION max_statement_time = ${seconds}, idle_transaction_timeout = ${seconds}`);
    } else {
      statements.push(`SET SESSION max_execution_time = ${seconds * 1000}`);
    }
    return statements;
  };
}

/**
 * Ends a connection's work from the outside: KILL closes the connection, which rolls back its open
 * transaction and frees its locks even while a statement is running or waiting for a lock. A fresh
 * connection is used because the pool may have none free.
 */
export async function killConnection(databaseUrl: string, threadId: number): Promise<void> {
  const { database: _database, ...server } = parseDatabaseUrl(databaseUrl);
  const conn = await mysql.createConnection({ ...server, connectTimeout: 5000 });
  try {
    await conn.query(`KILL ${Math.floor(threadId)}`);
  } catch (err) {
    // The connection ended on its own meanwhile.
    if ((err as { code?: string }).code !== 'ER_NO_SUCH_THREAD') throw err;
  } finally {
    await conn.end().catch(() => undefined);
  }
}
