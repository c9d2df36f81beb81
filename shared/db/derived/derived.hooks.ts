import type { Knex } from 'knex';
import type { Statement } from '../statement.batch';
import { ActiveFilesRepository } from '../repositories/active-files.repository';
import { CountersRepository } from './counters.repository';
import { SearchIndexRepository } from './search-index.repository';

type Db = Knex | Knex.Transaction;

/** Up to this many waiting ids, a flush skips the read of their rows (saves a round trip). */
const FEW = 8;
/** Longest name the schema holds, in characters: the bound of the index's positions when names are not read. */
const MAX_NAME_CHARS = 255;

/** Transactions whose owner (OwnerTransactions.run) flushes their deferred derived data before commit. */
const deferring = new WeakMap<object, DerivedData>();

/**
 * The one API through which a write keeps the data derived from `resources` exact: the file counts per
 * folder (`total` of a listing) and the search index. Call it with the transaction of the write (the
 * one OwnerTransactions.run opened with the owner's row locked), so the derived rows change with the
 * resources or not at all, and no new lock order appears. Methods take ids of any kind (folders are
 * ignored, only active files count) and read the rows' state themselves, so a caller only says when:
 *
 * - `activated(ids)`   AFTER rows became active: created, uploaded, restored from the trash.
 * - `deactivating(ids)` BEFORE active rows stop being active: soft delete (also of a subtree), purge.
 * - `moving(ids, change)` around a change of parent_id (counts follow the files).
 * - `renaming(ids, change)` around a change of name (index entries follow the name).
 *
 * Rows already inactive need nothing (a purge of trashed rows). What can wait (adding counts and
 * index entries from the rows' final state) waits until OwnerTransactions.run flushes it once before
 * the commit: a sync batch then pays one statement per table, not one per op. Outside such a
 * transaction every call writes at once. After a bug or a manual edit, `npm run fsck -- --repair`
 * recomputes everything.
 */
export class DerivedData {
  private readonly files: ActiveFilesRepository;
  private readonly counters: CountersRepository;
  private readonly index: SearchIndexRepository;
  /** Per owner: ids whose count is added at the flush (not counted in the table now). */
  private readonly uncounted = new Map<string, Set<string>>();
  /** Per owner: ids whose index entries are added at the flush (none in the table now). */
  private readonly unindexed = new Map<string, Set<string>>();

  private constructor(
    private readonly db: Db,
    private readonly deferred: boolean,
  ) {
    this.files = new ActiveFilesRepository(db);
    this.counters = new CountersRepository(db);
    this.index = new SearchIndexRepository(db);
  }

  /** The derived data of `db`: shared by every repository of a deferring transaction. */
  static of(db: Db): DerivedData {
    return deferring.get(db) ?? new DerivedData(db, false);
  }

  /** Called by OwnerTransactions.run: within `trx`, additions wait for `flush`. */
  static deferWithin(trx: Knex.Transaction): DerivedData {
    const derived = new DerivedData(trx, true);
    deferring.set(trx, derived);
    return derived;
  }

  async activated(userId: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    add(this.uncounted, userId, ids);
    add(this.unindexed, userId, ids);
    await this.settle();
  }

  async deactivating(userId: string, ids: string[]): Promise<void> {
    await this.counters.adjust(userId, without(this.uncounted, userId, ids), -1);
    await this.index.remove(userId, without(this.unindexed, userId, ids));
  }

  async moving<T>(userId: string, ids: string[], change: () => Promise<T>): Promise<T> {
    await this.counters.adjust(userId, without(this.uncounted, userId, ids), -1);
    // Counted again from the final state, also when the change failed and nothing moved.
    add(this.uncounted, userId, ids);
    try {
      return await change();
    } finally {
      await this.settle();
    }
  }

  async renaming<T>(userId: string, ids: string[], change: () => Promise<T>): Promise<T> {
    await this.index.remove(userId, without(this.unindexed, userId, ids));
    add(this.unindexed, userId, ids);
    try {
      return await change();
    } finally {
      await this.settle();
    }
  }

  /**
   * Adds the counts and index entries that waited, from the rows' state now. For many rows (a sync
   * batch's creates): one read of the rows (active files, their folders, the lengths of their names),
   * then one statement per table. For a few, one statement per table that reads the rows itself,
   * returned rather than run when `later`, for OwnerTransactions to send with its own last statement
   * in one round trip.
   */
  async flush(later = false): Promise<Statement[]> {
    const statements: Statement[] = [];
    for (const userId of new Set([...this.uncounted.keys(), ...this.unindexed.keys()])) {
      const uncounted = [...(this.uncounted.get(userId) ?? [])];
      const unindexed = [...(this.unindexed.get(userId) ?? [])];
      if (uncounted.length + unindexed.length <= FEW) {
        statements.push(...this.counters.adjusting(userId, uncounted, 1));
        statements.push(...this.index.adding(userId, unindexed.map((id) => ({ id, nameChars: MAX_NAME_CHARS }))));
        continue;
      }
      const waiting = new Set(uncounted);
      const files = await this.files.among(userId, [...new Set([...uncounted, ...unindexed])]);
      const counts = new Map<string, number>();
      for (const f of files) if (waiting.has(f.id)) counts.set(f.parentKey, (counts.get(f.parentKey) ?? 0) + 1);
      await this.counters.add(userId, counts);
      const indexing = new Set(unindexed);
      await this.index.add(userId, files.filter((f) => indexing.has(f.id)));
    }
    this.uncounted.clear();
    this.unindexed.clear();
    if (later) return statements;
    for (const statement of statements) await this.db.raw(statement.sql, statement.bindings);
    return [];
  }

  private async settle(): Promise<void> {
    if (!this.deferred) await this.flush();
  }
}

function add(pending: Map<string, Set<string>>, userId: string, ids: string[]): void {
  const set = pending.get(userId) ?? new Set<string>();
  for (const id of ids) set.add(id);
  pending.set(userId, set);
}

/** The ids not waiting in `pending`: only those have rows in the derived table to change now. */
function without(pending: Map<string, Set<string>>, userId: string, ids: string[]): string[] {
  const set = pending.get(userId);
  return set ? ids.filter((id) => !set.has(id)) : ids;
}
