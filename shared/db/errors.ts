import { invalid, nameConflict } from '../errors';

interface MysqlError {
  code?: string;
  errno?: number;
  sqlMessage?: string;
  message?: string;
}

function asMysqlError(err: unknown): MysqlError | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? (err as MysqlError) : undefined;
}

/** Which unique key a duplicate-entry error broke, from its message ("for key 'resources.PRIMARY'"). */
export function duplicateKey(err: unknown): string | undefined {
  const e = asMysqlError(err);
  if (e?.code !== 'ER_DUP_ENTRY') return undefined;
  const match = /for key '(?:[^'.]+\.)?([^']+)'/.exec(e.sqlMessage ?? e.message ?? '');
  return match?.[1] ?? 'unknown';
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'ER_CON_COUNT_ERROR',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
  'ER_SERVER_SHUTDOWN',
]);

/** True when the database could not serve the request, as opposed to rejecting it. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = asMysqlError(err);
  if (e?.code && UNAVAILABLE_CODES.has(e.code)) return true;
  // knex reports an exhausted pool or an unreachable server while acquiring a connection.
  return err instanceof Error && err.name === 'KnexTimeoutError';
}

/**
 * Translates a driver error raised by a resource write into the API's error codes: the sibling-name
 * key is NAME_CONFLICT, the primary key means the id is taken. Anything else is rethrown as is.
 */
export function translateResourceWriteError(err: unknown): never {
  const key = duplicateKey(err);
  if (key === 'uq_resources_sibling_name') throw nameConflict();
  if (key === 'PRIMARY') throw invalid('resource id is already in use');
  throw err;
}
