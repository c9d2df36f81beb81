import type { Knex } from 'knex';

/** Longest IN list sent in one statement. */
const CHUNK = 1000;

/** What the derived data needs to know of an active file. */
export interface ActiveFile {
  id: string;
  /** The folder it is in ('' for the root). */
  parentKey: string;
  /** Length of its name in characters (code points), as the server counts them. */
  nameChars: number;
}

/**
 * Reads, for the derived data (derived.hooks.ts), which of a set of resources are active files and
 * where they are. Only SQL. The rows are found by primary key (FORCE INDEX: given `user_id = ?` the
 * optimizer may otherwise walk all of the owner's rows on one of the indexes that start with it).
 */
export class ActiveFilesRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  async among(userId: string, ids: string[]): Promise<ActiveFile[]> {
    const files: ActiveFile[] = [];
    for (let i = 0; i < ids.length; i += CHUNK) {
      const chunk = ids.slice(i, i + CHUNK);
      const [rows] = (await this.db.raw(
        `SELECT id, parent_key, CHAR_LENGTH(name) AS chars FROM resources FORCE INDEX (PRIMARY)
         WHERE id IN (${chunk.map(() => '?').join(',')}) AND user_id = ? AND type = 'file' AND alive = 1`,
        [...chunk, userId],
      )) as [Array<{ id: string; parent_key: string; chars: string | number }>];
      for (const r of rows) files.push({ id: r.id, parentKey: r.parent_key, nameChars: Number(r.chars) });
    }
    return files;
  }
}
