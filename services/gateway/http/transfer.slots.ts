import type { Response } from 'express';
import { unavailable } from '../../../shared/errors';
import { UserSlots } from '../../../shared/fairness/user.slots';

/** How long a transfer waits for one of its user's slots before 503. */
const WAIT_MS = 5_000;
/** Transfers of one user waiting for a slot on one gateway; one more is answered 503 at once. */
const MAX_QUEUED = 64;

/**
 * Per-user slots for long transfers on one gateway (share links' content, archives and uploads; the
 * owner's archives): one user gets at most `perUser` of them at once, and the rest wait for those
 * (then 503 with Retry-After) instead of taking the gateway's sockets, store connections and event
 * loop from everyone else.
 */
export class TransferSlots {
  private readonly slots: UserSlots;

  constructor(
    perUser: number,
    private readonly busy: string,
  ) {
    this.slots = new UserSlots(perUser);
  }

  /** Takes a slot of `userId` for the response; it is given back when the response closes, sent or cut. */
  async enter(userId: string, res: Response): Promise<void> {
    if (!(await this.slots.take(userId, WAIT_MS, MAX_QUEUED))) throw unavailable(this.busy, 2);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.slots.release(userId);
    };
    if (res.writableFinished || res.destroyed) release();
    else res.once('close', release);
  }

  /** Transfers of `userId` in progress on this gateway. */
  inUse(userId: string): number {
    return this.slots.inUse(userId);
  }
}
