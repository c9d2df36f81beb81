import type { Knex } from 'knex';
import { statementTag, type StatementName } from '../../shared/db/statement.tags';

/**
 * Resolves once a statement tagged with one of `names` (shared/db/statement.tags.ts) runs on the
 * database `database`, waiting for a lock for instance. Fails after `timeoutMs`, naming the statements
 * it looked for and what was running instead.
 */
export async function untilStatementRunning(db: Knex, database: string, names: StatementName[], timeoutMs = 20_000): Promise<void> {
  const tags = names.map(statementTag);
  const end = Date.now() + timeoutMs;
  for (;;) {
    const [rows] = (await db.raw(`SELECT INFO AS text FROM information_schema.PROCESSLIST WHERE DB = ? AND COMMAND = 'Query' AND INFO IS NOT NULL`, [database])) as [Array<{ text: string }>];
    if (rows.some((r) => tags.some((tag) => r.text.startsWith(tag)))) return;
    if (Date.now() > end) {
      const running = rows.map((r) => r.text.replace(/\s+/g, ' ').slice(0, 120)).filter((s) => !s.includes('information_schema.PROCESSLIST'));
      throw new Error(`no statement tagged ${tags.join(' or ')} ran on ${database} within ${timeoutMs} ms; running: ${JSON.stringify(running)}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** How many statements tagged `name` `db` sends while `work` runs (knex 'query' events). */
export async function countStatements(db: Knex, name: StatementName, work: () => Promise<unknown>): Promise<number> {
  const tag = statementTag(name);
  let n = 0;
  const onQuery = (q: { sql: string }) => {
    if (q.sql.startsWith(tag)) n++;
  };
  db.on('query', onQuery);
  try {
    await work();
  } finally {
    db.removeListener('query', onQuery);
  }
  return n;
}
