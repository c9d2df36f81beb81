import type { Knex } from 'knex';
import { allowsMultipleStatements } from './knex';

/** One statement with its bindings (`?` marks), ready to be sent alone or with others. */
export interface Statement {
  sql: string;
  bindings: readonly Knex.Value[];
}

/** A query builder's statement as the server receives it. */
export function statementOf(query: Knex.QueryBuilder): Statement {
  const { sql, bindings } = query.toSQL().toNative();
  return { sql, bindings };
}

/**
 * Sends `statements` in order, in one round trip on a pool opened with `multipleStatements`
 * (shared/db/knex.ts), else one after the other. The first that fails stops the rest, and its error is
 * thrown as if it ran alone.
 */
export async function sendTogether(db: Knex | Knex.Transaction, statements: readonly Statement[]): Promise<void> {
  if (statements.length === 0) return;
  if (statements.length === 1 || !allowsMultipleStatements(db)) {
    for (const s of statements) await db.raw(s.sql, [...s.bindings]);
    return;
  }
  await db.raw(
    statements.map((s) => s.sql).join(';\n'),
    statements.flatMap((s) => s.bindings),
  );
}
