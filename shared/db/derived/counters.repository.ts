import type { Knex } from 'knex';
import type { Statement } from '../statement.batch';

/** Longest IN list sent in one statement. */
const CHUNK = 1000;

/** A stored count that differs from the one recomputed from `resources`. */
export interface CountDifference {
  userId: string;
  /** '' for the root. */
  parentKey: string;
  stored: number;
  actual: number;
}

/**
 * Active files per (owner, folder), the `total` of a listing. Only SQL; the write paths reach it
 * through DerivedData (derived.hooks.ts), inside the owner's transaction.
 */
export class CountersRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  /** Active files directly in the folder (null: the root). */
  async filesIn(userId: string, parentId: string | null): Promise<number> {
    const row = await this.db('folder_file_counts').where({ user_id: userId, parent_key: parentId ?? '' }).first<{ files: string | number } | undefined>('files');
    return Number(row?.files ?? 0);
  }

  /**
   * Adds `sign` for every active file among `ids`, to the count of the folder it is in now: -1 before
   * a change takes files out of a folder, +1 after one puts them in. The rows are found by primary key
   * (FORCE INDEX: given `user_id = ?` the optimizer may otherwise walk all of the owner's rows on one
   * of the indexes that start with it).
   */
  async adjust(userId: string, ids: string[], sign: 1 | -1): Promise<void> {
    for (const statement of this.adjusting(userId, ids, sign)) await this.db.raw(statement.sql, statement.bindings);
  }

  /** The statements of `adjust`, for a caller that sends them with others (statement.batch.ts). */
  adjusting(userId: string, ids: string[], sign: 1 | -1): Statement[] {
    const statements: Statement[] = [];
    for (let i = 0; i < ids.length; i += CHUNK) {
      const chunk = ids.slice(i, i + CHUNK);
      // VALUES(files) is deprecated on MySQL 8.0.20+ but still works there, and is what MariaDB has.
      statements.push({
        sql: `INSERT INTO folder_file_counts (user_id, parent_key, files)
         SELECT user_id, parent_key, ? * COUNT(*) FROM resources FORCE INDEX (PRIMARY)
         WHERE id IN (${chunk.map(() => '?').join(',')}) AND user_id = ? AND type = 'file' AND alive = 1
         GROUP BY user_id, parent_key
         ON DUPLICATE KEY UPDATE files = files + VALUES(files)`,
        bindings: [sign, ...chunk, userId],
      });
    }
    return statements;
  }

  /** Adds `files` to the count of each folder (parent key: '' for the root), in one statement per 1000 folders. */
  async add(userId: string, files: Map<string, number>): Promise<void> {
    const rows = [...files].filter(([, n]) => n !== 0);
    for (let i = 0; i < rows.length; i += CHUNK) {
      const chunk = rows.slice(i, i + CHUNK);
      await this.db.raw(
        `INSERT INTO folder_file_counts (user_id, parent_key, files) VALUES ${chunk.map(() => '(?, ?, ?)').join(', ')}
         ON DUPLICATE KEY UPDATE files = files + VALUES(files)`,
        chunk.flatMap(([parentKey, n]) => [userId, parentKey, n]),
      );
    }
  }

  /** Stored counts (non-zero) and recomputed ones of one owner that differ. */
  async differences(userId: string): Promise<CountDifference[]> {
    const [rows] = (await this.db.raw(
      `SELECT parent_key, SUM(stored) AS stored, SUM(actual) AS actual FROM (
         SELECT parent_key, files AS stored, 0 AS actual FROM folder_file_counts WHERE user_id = ?
         UNION ALL
         SELECT parent_key, 0, COUNT(*) FROM resources WHERE user_id = ? AND type = 'file' AND alive = 1 GROUP BY parent_key
       ) c GROUP BY parent_key HAVING SUM(stored) <> SUM(actual)`,
      [userId, userId],
    )) as [Array<{ parent_key: string; stored: string | number; actual: string | number }>];
    return rows.map((r) => ({ userId, parentKey: r.parent_key, stored: Number(r.stored), actual: Number(r.actual) }));
  }

  /** Replaces one owner's counts with counts recomputed from `resources`, in one pass. */
  async rebuild(userId: string): Promise<void> {
    await this.db('folder_file_counts').where({ user_id: userId }).delete();
    await this.db.raw(
      `INSERT INTO folder_file_counts (user_id, parent_key, files)
       SELECT user_id, parent_key, COUNT(*) FROM resources WHERE user_id = ? AND type = 'file' AND alive = 1
       GROUP BY user_id, parent_key`,
      [userId],
    );
  }
}
