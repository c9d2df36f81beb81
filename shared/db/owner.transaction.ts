import type { Knex } from 'knex';
import { DerivedData } from './derived/derived.hooks';
import type { Db } from './knex';
import { UsageLedger } from './derived/usage.ledger';
import { sendTogether, statementOf } from './statement.batch';

/** `deviceId` of a change no device made (the scheduled purge, an operator's repair). */
export const NO_DEVICE = '';

/** Whose tree a transaction changes, and which device's request changes it (NO_DEVICE: none). */
export interface ChangeAuthor {
  userId: string;
  deviceId: string;
}

/** What every change of a resource records: its feed position and the device that made it. */
export interface ChangeStamp {
  seq: number;
  deviceId: string;
}

/**
 * Positions in one owner's change feed. They are handed out while the owner's row is locked, so the
 * transaction that takes position n commits before any transaction can take n + 1: a reader that has
 * seen n + 1 has necessarily been able to see n, whatever the clocks of the machines say. Each
 * position comes stamped with the device of the transaction, so no write path can record a change
 * without saying who made it.
 */
export class ChangeClock {
  private last: number;

  constructor(
    readonly userId: string,
    private readonly start: number,
    readonly deviceId: string,
  ) {
    this.last = start;
  }

  /** The next position; each change of the transaction (an op, an upload, a delete) takes one. */
  next(): ChangeStamp {
    return { seq: ++this.last, deviceId: this.deviceId };
  }

  get advanced(): boolean {
    return this.last !== this.start;
  }

  get position(): number {
    return this.last;
  }
}

/**
 * The columns every change of a resource writes besides its own: the time, the next revision, the
 * feed position the change took from its transaction's clock and the device that made it. Every
 * write path spreads it into its UPDATE, so none can forget the feed or its author.
 */
export function changeColumns(db: Knex | Knex.Transaction, now: Date, stamp: ChangeStamp) {
  return { updated_at: now, change_seq: stamp.seq, change_device_id: stamp.deviceId, rev: db.raw('rev + 1') };
}

/** Told after a commit that changed an owner's tree, so held change-feed requests wake up. */
export interface ChangeNotifier {
  changed(userId: string): void;
}

export const silentNotifier: ChangeNotifier = { changed: () => undefined };

/**
 * What an owner transaction passes before it takes a database connection: resolves to the function
 * that lets the next one pass, or rejects (503) when the caller may not go on. The gateway's gate
 * bounds one user's share of its pool (shared/fairness/user.slots.ts).
 */
export interface OwnerGate {
  enter(userId: string): Promise<() => void>;
}

/**
 * Takes the owner's lock for the transaction: resolves to the owner's stored feed position, undefined
 * when there is no such owner. Without one, the owner's row is read with its byte counters, locked (UsageLedger.lockOwner).
 */
export type OwnerLock = (trx: Knex.Transaction, userId: string) => Promise<number | undefined>;

/** A committed owner transaction: what the work returned, and whether it took feed positions. */
export interface OwnerCommit<T> {
  value: T;
  changed: boolean;
}

/**
 * The one way to change an owner's tree: a transaction that locks the owner's row (serialising the
 * writes of one user across devices, workers and gateways), gives the work a clock for feed positions,
 * stores the clock's last position with the owner, writes the derived data that waited for the end
 * (derived.hooks.ts) and the byte counters (usage.ledger.ts), and after the commit notifies the change feed.
 */
export class OwnerTransactions {
  constructor(
    private readonly db: Db,
    private readonly notifier: ChangeNotifier = silentNotifier,
    private readonly gate?: OwnerGate,
  ) {}

  /**
   * Runs `work` as a change of `author.userId`'s tree made by `author.deviceId` (NO_DEVICE when no
   * device's request made it): every feed position the work takes records that device. After the
   * commit, the change feed is notified.
   */
  async run<T>(author: ChangeAuthor, work: (trx: Knex.Transaction, clock: ChangeClock) => Promise<T>): Promise<T> {
    const { value, changed } = await this.commit(author, work);
    if (changed) this.notifyChanged(author.userId);
    return value;
  }

  /**
   * The transaction of `run` without the notification, with the owner's lock taken by `lock`: for a
   * caller that tells others first (the sync worker announces its batches' results) and then calls
   * notifyChanged when `changed`.
   */
  async commit<T>(author: ChangeAuthor, work: (trx: Knex.Transaction, clock: ChangeClock) => Promise<T>, lock?: OwnerLock): Promise<OwnerCommit<T>> {
    const { userId, deviceId } = author;
    // Passed before a connection is taken: a caller held at the gate holds nothing of the pool.
    const leave = this.gate ? await this.gate.enter(userId) : undefined;
    let clock: ChangeClock | undefined;
    try {
      const value = await this.db.transaction(async (trx) => {
        const usage = UsageLedger.deferWithin(trx);
        // The plain lock also reads the byte counters, so a quota check inside costs no round trip.
        const position = lock ? await lock(trx, userId) : await usage.lockOwner(userId);
        clock = new ChangeClock(userId, position ?? 0, deviceId);
        const derived = DerivedData.deferWithin(trx);
        const result = await work(trx, clock);
        const last = await derived.flush(true);
        // The byte counters go into the statement that stores the feed position, which is sent with
        // the derived data's last statements: one round trip before the commit.
        const owner: Record<string, unknown> = await usage.columns(userId);
        if (clock.advanced) owner.change_seq = clock.position;
        if (Object.keys(owner).length > 0) last.push(statementOf(trx('users').where({ id: userId }).update(owner)));
        await sendTogether(trx, last);
        return result;
      });
      return { value, changed: clock?.advanced ?? false };
    } finally {
      leave?.();
    }
  }

  /** Wakes the change feed's waiting requests of `userId`; only after a commit that took feed positions. */
  notifyChanged(userId: string): void {
    this.notifier.changed(userId);
  }
}
