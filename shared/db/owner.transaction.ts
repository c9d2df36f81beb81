import type { Knex } from 'knex';
import { DerivedData } from './derived/derived.hooks';
import type { Db } from './knex';
import { UsageLedger } from '../quota/usage.ledger';
import { sendTogether, statementOf } from './statement.batch';
import { TogetherQueues, type TogetherWrite } from './group.commit';
import { GroupInserts } from './group.inserts';
import { unavailable } from '../errors';
import { ChangeClock, type ChangeAuthor, type ChangeStamp } from './change.clock';

export { ChangeClock, type ChangeAuthor, type ChangeStamp };

/** `deviceId` of a change no device made (the scheduled purge, an operator's repair). */
export const NO_DEVICE = '';

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
  /** How long a write may wait for its turn before it is refused, if the gate bounds that. */
  readonly maxWaitMs?: number;
  /** The error of a write refused for waiting too long (503 with Retry-After). */
  refusal?(): Error;
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

/** Per owner transaction: what runs once its writes are done, before the commit (beforeCommit). */
const finishing = new WeakMap<object, Array<() => Promise<void>>>();

/**
 * Runs `step` once the work of the owner transaction `trx` is done, before its commit, at the same
 * time as the steps other writes of a shared transaction registered: placing content (an object
 * store's PUT) then costs one round trip for a group of uploads, not one each under the lock. If a
 * step fails, the transaction is rolled back. Outside an owner transaction the step runs at once.
 */
export async function beforeCommit(trx: Knex.Transaction, step: () => Promise<void>): Promise<void> {
  const steps = finishing.get(trx);
  if (steps) steps.push(step);
  else await step();
}

/** Runs the registered steps together; once all have settled, the first failure is thrown. */
async function finish(trx: Knex.Transaction): Promise<void> {
  const steps = finishing.get(trx) ?? [];
  finishing.delete(trx);
  const failed = (await Promise.allSettled(steps.map((step) => step()))).find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}

/** The owner's state within its transaction: the feed position reached, and the deferred ledgers. */
interface OwnerState {
  position: number;
  readonly usage: UsageLedger;
  readonly derived: DerivedData;
}

/** Most writes that share one transaction (runTogether), and most waiting per user and process. */
const MAX_TOGETHER = 16;
const MAX_WAITING_TOGETHER = 256;

/**
 * The one way to change an owner's tree: a transaction that locks the owner's row (serialising the
 * writes of one user across devices, workers and gateways), gives the work a clock for feed positions,
 * stores the clock's last position with the owner, writes the derived data that waited for the end
 * (derived.hooks.ts) and the byte counters (usage.ledger.ts), and after the commit notifies the change feed.
 */
export class OwnerTransactions {
  private readonly together: TogetherQueues;

  constructor(
    private readonly db: Db,
    private readonly notifier: ChangeNotifier = silentNotifier,
    private readonly gate?: OwnerGate,
  ) {
    this.together = new TogetherQueues((userId, writes) => this.commitTogether(userId, writes), {
      maxPerTransaction: MAX_TOGETHER,
      maxWaiting: MAX_WAITING_TOGETHER,
      maxWaitMs: gate?.maxWaitMs,
      refusal: () => gate?.refusal?.() ?? unavailable('too many writes of this user at once; retry shortly', 2),
    });
  }

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
   * As `run`, but the work may share one transaction with other writes of the same owner that wait
   * in this process at the same moment (group.commit.ts), in the order they came. Each runs behind
   * a savepoint: one that fails is rolled back alone, with what it left for the end of the
   * transaction, and rejects alone; the others commit. For writes that are many, small and
   * independent (uploads), whose cost is mostly the lock and the commit.
   */
  runTogether<T>(author: ChangeAuthor, work: (trx: Knex.Transaction, clock: ChangeClock) => Promise<T>, options: { rerunnable?: boolean } = {}): Promise<T> {
    return this.together.submit(author, work, options.rerunnable ?? false);
  }

  /**
   * The transaction of `run` without the notification, with the owner's lock taken by `lock`: for a
   * caller that tells others first (the sync worker announces its batches' results) and then calls
   * notifyChanged when `changed`.
   */
  commit<T>(author: ChangeAuthor, work: (trx: Knex.Transaction, clock: ChangeClock) => Promise<T>, lock?: OwnerLock): Promise<OwnerCommit<T>> {
    return this.transact(author.userId, lock, async (trx, owner) => {
      const clock = new ChangeClock(author.userId, owner.position, author.deviceId);
      const value = await work(trx, clock);
      owner.position = clock.position;
      return value;
    });
  }

  /** Wakes the change feed's waiting requests of `userId`; only after a commit that took feed positions. */
  notifyChanged(userId: string): void {
    this.notifier.changed(userId);
  }

  /**
   * One transaction for `writes` of one owner, each settled: its value after the commit, or its error.
   * A group of rerunnable writes first goes without savepoints (a round trip less per write); if one
   * of them fails, that transaction is rolled back and the group runs again, each behind its savepoint.
   */
  private async commitTogether(userId: string, writes: TogetherWrite[]): Promise<void> {
    const optimistic = writes.length > 1 && writes.every((w) => w.rerunnable);
    if (!optimistic || (await this.commitGroup(userId, writes, false)) === 'again') await this.commitGroup(userId, writes, writes.length > 1);
  }

  private async commitGroup(userId: string, writes: TogetherWrite[], guarded: boolean): Promise<'settled' | 'again'> {
    const outcomes: ({ value: unknown } | { error: unknown })[] = [];
    // A write of an unguarded group failed: nothing is settled, the group goes again with savepoints.
    let again = false;
    const { changed } = await this.transact(userId, undefined, async (trx, owner) => {
      // Without savepoints the group's inserts wait for one statement (group.inserts.ts).
      if (!guarded && writes.length > 1) GroupInserts.begin(trx);
      for (const write of writes) {
        // A lone write needs no savepoint: its failure rolls the whole transaction back, as in run.
        const undo = guarded ? await savepoint(trx, owner) : undefined;
        const clock = new ChangeClock(userId, owner.position, write.author.deviceId);
        try {
          outcomes.push({ value: await write.work(trx, clock) });
          owner.position = clock.position;
        } catch (error) {
          if (!undo) {
            again = writes.length > 1;
            throw error;
          }
          await undo(error);
          outcomes.push({ error });
        }
      }
      try {
        await GroupInserts.flush(trx);
      } catch (error) {
        // A row refused (a name taken meanwhile or twice in the group): each write meets it alone.
        again = writes.length > 1;
        throw error;
      }
    }).catch((err: unknown) => {
      if (!again) for (const write of writes) write.reject(err);
      return { changed: false };
    });
    if (again) return 'again';
    if (changed) this.notifyChanged(userId);
    outcomes.forEach((outcome, i) => ('error' in outcome ? writes[i]!.reject(outcome.error) : writes[i]!.resolve(outcome.value)));
    return 'settled';
  }

  /**
   * Locks the owner (its row, or `lock`), runs `body`, then writes what waited for the end (derived
   * data, byte counters, the feed position) in one round trip and commits. `changed`: the body took
   * feed positions.
   */
  private async transact<R>(userId: string, lock: OwnerLock | undefined, body: (trx: Knex.Transaction, owner: OwnerState) => Promise<R>): Promise<OwnerCommit<R>> {
    // Passed before a connection is taken: a caller held at the gate holds nothing of the pool.
    const leave = this.gate ? await this.gate.enter(userId) : undefined;
    let changed = false;
    try {
      const value = await this.db.transaction(async (trx) => {
        const usage = UsageLedger.deferWithin(trx);
        // The plain lock also reads the byte counters, so a quota check inside costs no round trip.
        const start = (lock ? await lock(trx, userId) : await usage.lockOwner(userId)) ?? 0;
        const owner: OwnerState = { position: start, usage, derived: DerivedData.deferWithin(trx) };
        finishing.set(trx, []);
        const result = await body(trx, owner);
        await finish(trx);
        const last = await owner.derived.flush(true);
        // The byte counters go into the statement that stores the feed position, which is sent with
        // the derived data's last statements: one round trip before the commit.
        const columns: Record<string, unknown> = await usage.columns(userId);
        if (owner.position !== start) columns.change_seq = owner.position;
        if (Object.keys(columns).length > 0) last.push(statementOf(trx('users').where({ id: userId }).update(columns)));
        await sendTogether(trx, last);
        changed = owner.position !== start;
        return result;
      });
      return { value, changed };
    } finally {
      leave?.();
    }
  }
}

/**
 * Marks where the next write of a shared transaction starts; the returned function undoes that write
 * after it failed with `cause`: its rows by the database, its byte deltas and its steps before the
 * commit here. The derived data needs nothing: what waits for its flush is read from the rows then,
 * and the undone rows are gone. When the database cannot go back to the mark (a deadlock ended the
 * whole transaction), `cause` ends the transaction for every write in it.
 */
async function savepoint(trx: Knex.Transaction, owner: OwnerState): Promise<(cause: unknown) => Promise<void>> {
  await trx.raw('SAVEPOINT together');
  const restoreUsage = owner.usage.checkpoint();
  const steps = finishing.get(trx);
  const stepsBefore = steps?.length ?? 0;
  return async (cause) => {
    try {
      await trx.raw('ROLLBACK TO SAVEPOINT together');
    } catch {
      throw cause;
    }
    restoreUsage();
    steps?.splice(stepsBefore);
  };
}
