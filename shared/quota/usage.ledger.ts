import type { Knex } from 'knex';
import { USAGE_KINDS, UsageRepository, type ByteCounts, type Usage, type UsageKind } from './usage.repository';

type Db = Knex | Knex.Transaction;

/** Transactions whose owner (OwnerTransactions.run) writes the counters with its feed position. */
const deferring = new WeakMap<object, UsageLedger>();

const zero = (): ByteCounts => ({ files: 0, trash: 0, versions: 0, uploads: 0 });

/**
 * The one API through which a write keeps a user's byte counters exact (users.files_bytes and the
 * others, usage.repository.ts), in the transaction of the write, as DerivedData does for the folder
 * counts. Repositories call it where they change content:
 *
 * - `add(user, kind, bytes)` for bytes that appear or leave (an upload, a kept or dropped version, a
 *   reservation, a purge).
 * - `trashed(user, ids)` AFTER active files went to the trash: their content moves from files to
 *   trash, summed once at the end of the transaction (one statement for a whole sync batch).
 *
 * Inside OwnerTransactions.run nothing is written until its end, where the deltas go into the
 * statement that stores the feed position; elsewhere every call writes at once. `usage(user)` is the
 * state a quota is checked against: the locked row plus what this transaction added.
 * `npm run fsck` recomputes the counters from the rows.
 */
export class UsageLedger {
  private readonly repo: UsageRepository;
  private readonly deltas = new Map<string, ByteCounts>();
  private readonly inTrash = new Map<string, Set<string>>();
  /**
   * Per user: the counters as stored, read once under the owner's lock. While deferred nothing writes
   * them before the end of the transaction, so the first read stays exact.
   */
  private readonly locked = new Map<string, Usage>();

  private constructor(
    private readonly db: Db,
    private readonly deferred: boolean,
  ) {
    this.repo = new UsageRepository(db);
  }

  static of(db: Db): UsageLedger {
    return deferring.get(db) ?? new UsageLedger(db, false);
  }

  /** Called by OwnerTransactions.run: within `trx`, counters are written by `columns` at the end. */
  static deferWithin(trx: Knex.Transaction): UsageLedger {
    const ledger = new UsageLedger(trx, true);
    deferring.set(trx, ledger);
    return ledger;
  }

  /**
   * Locks the owner's row (OwnerTransactions.run's lock) and keeps the counters the same statement
   * read, so a quota check in the transaction costs no round trip of its own. Resolves to the owner's
   * feed position; undefined when there is no such user.
   */
  async lockOwner(userId: string): Promise<number | undefined> {
    const owner = await this.repo.lockOwner(userId);
    if (!owner) return undefined;
    if (this.deferred) this.locked.set(userId, owner.usage);
    return owner.changeSeq;
  }

  async add(userId: string, kind: UsageKind, bytes: number): Promise<void> {
    if (bytes === 0) return;
    const d = this.deltas.get(userId) ?? zero();
    d[kind] += bytes;
    this.deltas.set(userId, d);
    if (!this.deferred) await this.writeAll();
  }

  async trashed(userId: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const set = this.inTrash.get(userId) ?? new Set<string>();
    for (const id of ids) set.add(id);
    this.inTrash.set(userId, set);
    if (!this.deferred) await this.writeAll();
  }

  /** The user's quota and counters as this transaction sees them (row locked, pending deltas added). */
  async usage(userId: string): Promise<Usage> {
    await this.settleTrash();
    let stored = this.locked.get(userId);
    if (!stored) {
      stored = await this.repo.readLocked(userId);
      if (this.deferred) this.locked.set(userId, stored);
    }
    const d = this.deltas.get(userId) ?? zero();
    return { quotaBytes: stored.quotaBytes, files: stored.files + d.files, trash: stored.trash + d.trash, versions: stored.versions + d.versions, uploads: stored.uploads + d.uploads };
  }

  /**
   * Turns the files sent to the trash into counter moves. Called before anything that reads or
   * changes trash rows of this transaction again (a purge, a restore, `usage`), and at the end.
   */
  async settleTrash(): Promise<void> {
    for (const [userId, ids] of this.inTrash) {
      const bytes = await this.repo.trashedBytes(userId, [...ids]);
      const d = this.deltas.get(userId) ?? zero();
      d.files -= bytes;
      d.trash += bytes;
      this.deltas.set(userId, d);
    }
    this.inTrash.clear();
  }

  /**
   * For OwnerTransactions.run: the owner's counter updates, to be written with its feed position in
   * one statement; the counters of any other user are written here.
   */
  async columns(ownerId: string): Promise<Record<string, Knex.Raw>> {
    await this.settleTrash();
    let owner: Record<string, Knex.Raw> = {};
    for (const [userId, d] of this.deltas) {
      if (userId === ownerId) owner = UsageRepository.increments(this.db, d);
      else await this.repo.add(userId, d);
    }
    this.deltas.clear();
    return owner;
  }

  /**
   * The deltas waiting now; the returned function puts them back, for a write undone by a rollback to
   * a savepoint (OwnerTransactions.runTogether). The counters read under the lock stay: nothing writes
   * them before the end of the transaction.
   */
  checkpoint(): () => void {
    const deltas = new Map([...this.deltas].map(([userId, d]) => [userId, { ...d }]));
    const inTrash = new Map([...this.inTrash].map(([userId, ids]) => [userId, new Set(ids)]));
    return () => {
      this.deltas.clear();
      for (const [userId, d] of deltas) this.deltas.set(userId, { ...d });
      this.inTrash.clear();
      for (const [userId, ids] of inTrash) this.inTrash.set(userId, new Set(ids));
    };
  }

  private async writeAll(): Promise<void> {
    await this.settleTrash();
    for (const [userId, d] of this.deltas) if (USAGE_KINDS.some((k) => d[k] !== 0)) await this.repo.add(userId, d);
    this.deltas.clear();
  }
}
