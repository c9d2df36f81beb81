import type { Knex } from 'knex';
import type { ChangeAuthor, ChangeClock } from './change.clock';

/** A write waiting to share its owner's next transaction (OwnerTransactions.runTogether). */
export interface TogetherWrite {
  readonly author: ChangeAuthor;
  readonly work: (trx: Knex.Transaction, clock: ChangeClock) => Promise<unknown>;
  /** The work changes nothing outside its transaction and may run again in another one (OwnerTransactions.runTogether). */
  readonly rerunnable?: boolean;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

export interface TogetherLimits {
  /** Most writes one transaction takes. */
  maxPerTransaction: number;
  /** Most writes of one user waiting behind a running transaction; one more is refused at once. */
  maxWaiting: number;
  /** How long a write may wait for its turn; then it is refused. Unbounded when absent; 0: never held. */
  maxWaitMs?: number;
  /** The error a refused write gets (503 with Retry-After in the gateway). */
  refusal: () => Error;
}

interface Waiting {
  write: TogetherWrite;
  timer?: NodeJS.Timeout;
}

interface Owner {
  waiting: Waiting[];
  running: boolean;
}

/**
 * Group commit, per owner: the writes of this process that wait while one of that owner's transactions runs. One
 * user's writes are serialised by the owner's row lock anyway, and each transaction pays the lock,
 * the counters' statement and a durable commit (an fsync) while holding it: when the transaction ends,
 * the writes that queued meanwhile all go into the next one, so a burst of small uploads pays those
 * once, not once each. A write that arrives while none runs starts at once, so a lone one waits for
 * nothing. `commit` runs one transaction for the writes given and settles every one of them.
 */
export class TogetherQueues {
  private readonly owners = new Map<string, Owner>();

  constructor(
    private readonly commit: (userId: string, writes: TogetherWrite[]) => Promise<void>,
    private readonly limits: TogetherLimits,
  ) {}

  submit<T>(author: ChangeAuthor, work: (trx: Knex.Transaction, clock: ChangeClock) => Promise<T>, rerunnable = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const write: TogetherWrite = { author, work, rerunnable, resolve: resolve as (value: unknown) => void, reject };
      // Writes that may not wait at all (USER_WRITE_WAIT_MS=0) are not held for a shared transaction
      // either: each goes to the owner's gate at once, as a write of its own.
      if (this.limits.maxWaitMs !== undefined && this.limits.maxWaitMs <= 0) {
        this.commit(author.userId, [write]).catch(reject);
        return;
      }
      let owner = this.owners.get(author.userId);
      if (!owner) {
        owner = { waiting: [], running: false };
        this.owners.set(author.userId, owner);
      }
      if (owner.waiting.length >= this.limits.maxWaiting) {
        reject(this.limits.refusal());
        return;
      }
      const entry: Waiting = { write };
      owner.waiting.push(entry);
      if (owner.running) this.startTimer(owner, entry);
      else void this.drain(author.userId, owner);
    });
  }

  private startTimer(owner: Owner, entry: Waiting): void {
    const { maxWaitMs } = this.limits;
    if (maxWaitMs === undefined) return;
    entry.timer = setTimeout(() => {
      const i = owner.waiting.indexOf(entry);
      if (i < 0) return;
      owner.waiting.splice(i, 1);
      entry.write.reject(this.limits.refusal());
    }, maxWaitMs);
  }

  /** Runs the owner's transactions one after another while writes wait; a failed one refuses its group. */
  private async drain(userId: string, owner: Owner): Promise<void> {
    owner.running = true;
    try {
      while (owner.waiting.length > 0) {
        const taken = owner.waiting.splice(0, this.limits.maxPerTransaction);
        for (const entry of taken) clearTimeout(entry.timer);
        const writes = taken.map((entry) => entry.write);
        // Settling a write twice is harmless: what commit settled stays settled.
        await this.commit(userId, writes).catch((err: unknown) => writes.forEach((w) => w.reject(err)));
      }
    } finally {
      owner.running = false;
      if (owner.waiting.length === 0 && this.owners.get(userId) === owner) this.owners.delete(userId);
    }
  }
}
