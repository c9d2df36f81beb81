import type { Knex } from 'knex';
import { statementOf } from '../statement.batch';
import { COLUMNS, toRecord, type ResourceRecord, type ResourceRow } from './resource.record';

/** A place in one owner's change feed: after the change at `seq`, resource `id`. */
export interface FeedPosition {
  seq: number;
  id: string;
}

export const FEED_START: FeedPosition = { seq: 0, id: '' };

/**
 * Reads the change feed: every resource of an owner whose latest change lies after a position, in
 * feed order (seq, then id for the resources one change touched together, such as a deleted subtree).
 * Each resource is one row, so it appears once, at its latest state.
 */
export class ChangeRepository {
  constructor(private readonly db: Knex) {}

  /** The last position handed out for this owner. */
  async lastSeq(userId: string): Promise<number> {
    const row = await this.db('users').where({ id: userId }).first<{ change_seq: string | number } | undefined>('change_seq');
    return Number(row?.change_seq ?? 0);
  }

  /** The last positions of these owners; an owner that no longer exists is left out. */
  async lastSeqs(userIds: readonly string[]): Promise<Map<string, number>> {
    if (userIds.length === 0) return new Map();
    const rows = await this.db('users').whereIn('id', userIds).select<{ id: string; change_seq: string | number }[]>('id', 'change_seq');
    return new Map(rows.map((r) => [r.id, Number(r.change_seq)]));
  }

  /**
   * Resources changed after `after`, at most `limit`. Resources deleted at or before `hideDeletedUpTo`
   * are left out: a client starting from scratch has nothing to delete.
   */
  async changesAfter(userId: string, after: FeedPosition, hideDeletedUpTo: number, limit: number): Promise<ResourceRecord[]> {
    const rows = await this.feedQuery(userId, after, hideDeletedUpTo, limit);
    return (rows as ResourceRow[]).map(toRecord);
  }

  /**
   * changesAfter, and the owner's last position read just before it, in one round trip: whatever
   * commits after the page was read takes a position past `lastSeq`.
   */
  async changesAfterWithPosition(
    userId: string,
    after: FeedPosition,
    hideDeletedUpTo: number,
    limit: number,
  ): Promise<{ records: ResourceRecord[]; lastSeq: number }> {
    const position = statementOf(this.db('users').where({ id: userId }).select('change_seq'));
    const page = statementOf(this.feedQuery(userId, after, hideDeletedUpTo, limit));
    // Two statements of one query run in order, each on its own snapshot (READ COMMITTED).
    const [[owner, rows]] = (await this.db.raw(`${position.sql};\n${page.sql}`, [...position.bindings, ...page.bindings])) as [
      [{ change_seq: string | number }[], ResourceRow[]],
    ];
    return { records: rows.map(toRecord), lastSeq: Number(owner[0]?.change_seq ?? 0) };
  }

  private feedQuery(userId: string, after: FeedPosition, hideDeletedUpTo: number, limit: number) {
    return this.db('resources')
      .where({ user_id: userId })
      .andWhere((q) => q.where('change_seq', '>', after.seq).orWhere((same) => same.where('change_seq', after.seq).andWhere('id', '>', after.id)))
      .andWhere((q) => q.whereNull('deleted_at').orWhere('change_seq', '>', hideDeletedUpTo))
      .orderBy([
        { column: 'change_seq', order: 'asc' },
        { column: 'id', order: 'asc' },
      ])
      .limit(limit)
      .select(COLUMNS);
  }
}
