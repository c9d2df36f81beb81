import type { Knex } from 'knex';
import { STATEMENTS, statementTag } from '../db/statement.tags';

/** Longest IN list sent in one statement. */
const CHUNK = 1000;

/** The kinds of bytes a user holds; `usedBytes` is their sum. */
export const USAGE_KINDS = ['files', 'trash', 'versions', 'uploads'] as const;
export type UsageKind = (typeof USAGE_KINDS)[number];

export type ByteCounts = Record<UsageKind, number>;

/** A user's quota (null: none) and stored counters. */
export interface Usage extends ByteCounts {
  quotaBytes: number | null;
}

export const usedBytes = (u: ByteCounts): number => u.files + u.trash + u.versions + u.uploads;

/** A stored counter that differs from the one recomputed from the rows. */
export interface UsageDifference {
  userId: string;
  kind: UsageKind;
  stored: number;
  actual: number;
}

const COLUMN: Record<UsageKind, string> = {
  files: 'files_bytes',
  trash: 'trash_bytes',
  versions: 'versions_bytes',
  uploads: 'uploads_bytes',
};

interface UsageRow {
  quota_bytes: string | number | null;
  files_bytes: string | number;
  trash_bytes: string | number;
  versions_bytes: string | number;
  uploads_bytes: string | number;
}

const toUsage = (r: UsageRow): Usage => ({
  quotaBytes: r.quota_bytes === null ? null : Number(r.quota_bytes),
  files: Number(r.files_bytes),
  trash: Number(r.trash_bytes),
  versions: Number(r.versions_bytes),
  uploads: Number(r.uploads_bytes),
});

/**
 * Recomputes every counter of the users in `scope` (a subquery of user ids) from the rows: content of
 * active files and of files in the trash (a file without content holds nothing), kept versions, and
 * unfinished uploads' reservations.
 */
const ACTUAL = (scope: string) => `
  SELECT u.id AS user_id,
    (SELECT COALESCE(SUM(size_bytes), 0) FROM resources WHERE user_id = u.id AND type = 'file' AND alive = 1 AND storage_key IS NOT NULL) AS files,
    (SELECT COALESCE(SUM(size_bytes), 0) FROM resources WHERE user_id = u.id AND type = 'file' AND restorable = 1 AND storage_key IS NOT NULL) AS trash,
    (SELECT COALESCE(SUM(size_bytes), 0) FROM file_versions WHERE user_id = u.id) AS versions,
    (SELECT COALESCE(SUM(bytes), 0) FROM upload_reservations WHERE user_id = u.id) AS uploads
  FROM users u WHERE u.id IN (${scope})`;

/**
 * SQL of the per-user byte counters (columns of `users`). The write paths reach it through
 * UsageLedger (usage.ledger.ts), inside the owner's transaction; fsck compares and rebuilds.
 */
export class UsageRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  /** The stored counters, one primary-key read; undefined for an absent or deleted user. */
  async read(userId: string): Promise<Usage | undefined> {
    const [rows] = (await this.db.raw(
      'SELECT quota_bytes, files_bytes, trash_bytes, versions_bytes, uploads_bytes FROM users WHERE id = ? AND deleted_at IS NULL',
      [userId],
    )) as [UsageRow[]];
    return rows[0] ? toUsage(rows[0]) : undefined;
  }

  /** Bytes stored by every user together, by kind (the metrics; one pass over `users`). */
  async totals(): Promise<ByteCounts> {
    const [rows] = (await this.db.raw(
      `SELECT COALESCE(SUM(files_bytes), 0) AS files, COALESCE(SUM(trash_bytes), 0) AS trash,
              COALESCE(SUM(versions_bytes), 0) AS versions, COALESCE(SUM(uploads_bytes), 0) AS uploads FROM users`,
    )) as [Array<Record<UsageKind, string | number>>];
    const r = rows[0];
    return { files: Number(r?.files ?? 0), trash: Number(r?.trash ?? 0), versions: Number(r?.versions ?? 0), uploads: Number(r?.uploads ?? 0) };
  }

  /** The counters as committed, read with the owner's row lock (inside the owner's transaction). */
  async readLocked(userId: string): Promise<Usage> {
    const [rows] = (await this.db.raw(
      'SELECT quota_bytes, files_bytes, trash_bytes, versions_bytes, uploads_bytes FROM users WHERE id = ? FOR UPDATE',
      [userId],
    )) as [UsageRow[]];
    if (!rows[0]) throw new Error(`no user ${userId}`);
    return toUsage(rows[0]);
  }

  /**
   * Takes the owner's row lock and reads, in that one round trip, its feed position and the counters
   * as committed; undefined when there is no such user.
   */
  async lockOwner(userId: string): Promise<{ changeSeq: number; usage: Usage } | undefined> {
    const [rows] = (await this.db.raw(
      `${statementTag(STATEMENTS.lockOwner)} ` +
        'SELECT change_seq, quota_bytes, files_bytes, trash_bytes, versions_bytes, uploads_bytes FROM users WHERE id = ? FOR UPDATE',
      [userId],
    )) as [Array<UsageRow & { change_seq: string | number }>];
    return rows[0] ? { changeSeq: Number(rows[0].change_seq), usage: toUsage(rows[0]) } : undefined;
  }

  /** The column updates that add `deltas` to the counters (only the non-zero ones). */
  static increments(db: Knex | Knex.Transaction, deltas: Partial<ByteCounts>): Record<string, Knex.Raw> {
    const update: Record<string, Knex.Raw> = {};
    for (const kind of USAGE_KINDS) {
      const d = deltas[kind] ?? 0;
      if (d !== 0) update[COLUMN[kind]] = db.raw(`${COLUMN[kind]} + ?`, [d]);
    }
    return update;
  }

  async add(userId: string, deltas: Partial<ByteCounts>): Promise<void> {
    const update = UsageRepository.increments(this.db, deltas);
    if (Object.keys(update).length > 0) await this.db('users').where({ id: userId }).update(update);
  }

  /** Bytes of content held by the files among `ids` that are in the trash now. */
  async trashedBytes(userId: string, ids: string[]): Promise<number> {
    let total = 0;
    for (let i = 0; i < ids.length; i += CHUNK) {
      const chunk = ids.slice(i, i + CHUNK);
      const [rows] = (await this.db.raw(
        `SELECT COALESCE(SUM(size_bytes), 0) AS n FROM resources FORCE INDEX (PRIMARY)
         WHERE id IN (${chunk.map(() => '?').join(',')}) AND user_id = ? AND type = 'file' AND restorable = 1 AND storage_key IS NOT NULL`,
        [...chunk, userId],
      )) as [Array<{ n: string | number }>];
      total += Number(rows[0]?.n ?? 0);
    }
    return total;
  }

  /** Sets the quota of an active user (null: none); false when there is no such user. */
  async setQuota(userId: string, quotaBytes: number | null): Promise<boolean> {
    const n = await this.db('users').where({ id: userId }).whereNull('deleted_at').update({ quota_bytes: quotaBytes });
    return n > 0;
  }

  /** Counters of one user that differ from the ones recomputed from the rows. */
  async differences(userId: string): Promise<UsageDifference[]> {
    const actual = await this.actual(userId);
    const stored = await this.db('users').where({ id: userId }).first<UsageRow | undefined>('quota_bytes', 'files_bytes', 'trash_bytes', 'versions_bytes', 'uploads_bytes');
    if (!actual || !stored) return [];
    const counts = toUsage(stored);
    return USAGE_KINDS.filter((k) => counts[k] !== actual[k]).map((kind) => ({ userId, kind, stored: counts[kind], actual: actual[kind] }));
  }

  /** Every user id, in id order after `afterId`, at most `limit`. */
  async userIds(afterId: string, limit: number): Promise<string[]> {
    const rows = await this.db('users').where('id', '>', afterId).orderBy('id').limit(limit).select<{ id: string }[]>('id');
    return rows.map((r) => r.id);
  }

  /** The counters recomputed from the rows. */
  async actual(userId: string): Promise<ByteCounts | undefined> {
    const [rows] = (await this.db.raw(ACTUAL('?'), [userId])) as [Array<Record<string, string | number>>];
    const a = rows[0];
    return a ? { files: Number(a.files), trash: Number(a.trash), versions: Number(a.versions), uploads: Number(a.uploads) } : undefined;
  }

  /** Replaces one user's counters with the recomputed ones (call with the owner's row locked). */
  async rebuild(userId: string): Promise<void> {
    const a = await this.actual(userId);
    if (!a) return;
    await this.db('users').where({ id: userId }).update({ files_bytes: a.files, trash_bytes: a.trash, versions_bytes: a.versions, uploads_bytes: a.uploads });
  }

  /** Recomputes the counters of every user (the migration that introduces them). */
  async rebuildAll(): Promise<void> {
    let after = '';
    for (;;) {
      const ids = await this.userIds(after, 500);
      if (ids.length === 0) return;
      for (const id of ids) await this.rebuild(id);
      after = ids[ids.length - 1]!;
    }
  }
}
