import type { OwnerGate } from '../db/owner.transaction';
import { unavailable } from '../errors';

interface Waiter {
  grant: () => void;
  timer: NodeJS.Timeout;
}

/**
 * Per-user slots of one process. One user's writes are serialised by that user's row lock (see
 * shared/db/owner.transaction.ts), so a second write of a user can only wait, and it waits holding a
 * database connection: without a bound, one user's flood fills the pool and everyone else waits for a
 * connection. A slot is what a write needs before it may take a connection; each user has `perUser` of
 * them in a process. Two is enough to keep a user's own writes flowing: one holds the lock, one is
 * ready to take it at the commit; a third would only wait longer.
 */
export class UserSlots {
  private readonly held = new Map<string, number>();
  private readonly waiting = new Map<string, Waiter[]>();

  constructor(readonly perUser: number) {
    if (!Number.isInteger(perUser) || perUser < 1) throw new Error('perUser must be a positive integer');
  }

  /** Takes a slot of `userId` when one is free. */
  tryTake(userId: string): boolean {
    const n = this.held.get(userId) ?? 0;
    if (n >= this.perUser) return false;
    this.held.set(userId, n + 1);
    return true;
  }

  /**
   * Takes a slot, waiting for one at most `maxWaitMs` behind at most `maxQueued` others of the same
   * user (first come, first served); false when none came. A waiter holds nothing but a timer.
   */
  take(userId: string, maxWaitMs: number, maxQueued: number): Promise<boolean> {
    if (this.tryTake(userId)) return Promise.resolve(true);
    const queue = this.waiting.get(userId) ?? [];
    if (queue.length >= maxQueued || maxWaitMs <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        grant: () => {
          clearTimeout(waiter.timer);
          resolve(true);
        },
        timer: setTimeout(() => {
          const i = queue.indexOf(waiter);
          if (i >= 0) queue.splice(i, 1);
          if (queue.length === 0 && this.waiting.get(userId) === queue) this.waiting.delete(userId);
          resolve(false);
        }, maxWaitMs),
      };
      queue.push(waiter);
      this.waiting.set(userId, queue);
    });
  }

  /** Gives a slot back; the user's oldest waiter gets it at once. */
  release(userId: string): void {
    const queue = this.waiting.get(userId);
    const next = queue?.shift();
    if (queue && queue.length === 0) this.waiting.delete(userId);
    if (next) {
      next.grant();
      return;
    }
    const n = (this.held.get(userId) ?? 0) - 1;
    if (n > 0) this.held.set(userId, n);
    else this.held.delete(userId);
  }

  /** Slots of `userId` in use. */
  inUse(userId: string): number {
    return this.held.get(userId) ?? 0;
  }

  /** Writes of `userId` waiting for a slot. */
  queued(userId: string): number {
    return this.waiting.get(userId)?.length ?? 0;
  }
}

/** Writes of one user waiting for a slot on one gateway; one more is answered 503 at once. */
export const MAX_QUEUED_WRITES_PER_USER = 256;

/**
 * The gateway's gate in front of owner transactions: a write of a user whose slots are all taken
 * waits without a connection, up to `maxWaitMs`, then gets 503 with Retry-After. Only that user's
 * requests ever wait here; other users' requests find the pool as if the flood were not there.
 */
export function userWriteGate(slots: UserSlots, maxWaitMs: number, maxQueued = MAX_QUEUED_WRITES_PER_USER): OwnerGate {
  const refusal = () => unavailable('too many writes of this user at once; retry shortly', 2);
  return {
    maxWaitMs,
    refusal,
    async enter(userId: string) {
      if (!(await slots.take(userId, maxWaitMs, maxQueued))) throw refusal();
      let released = false;
      return () => {
        if (released) return;
        released = true;
        slots.release(userId);
      };
    },
  };
}
