import type { Response } from 'express';
import { unavailable } from '../../../shared/errors';
import { UserSlots } from '../../../shared/fairness/user.slots';

/** How long a public transfer waits for one of its owner's slots before 503. */
const WAIT_MS = 5_000;
/** Transfers of one owner waiting for a slot on one gateway; one more is answered 503 at once. */
const MAX_QUEUED = 64;

/**
 * Per-owner slots for the transfers of share links (content, archives, uploads) on one gateway: a
 * link shared widely gets at most LINK_TRANSFERS_PER_OWNER transfers at once, and its crowd waits for
 * those (then 503 with Retry-After) instead of taking the gateway's sockets, store connections and
 * event loop from everyone else. The owner's own requests do not take these slots.
 */
export class LinkTransfers {
  private readonly slots: UserSlots;

  constructor(perOwner: number) {
    this.slots = new UserSlots(perOwner);
  }

  /** Takes a slot of `ownerId` for the response; it is given back when the response closes, sent or cut. */
  async enter(ownerId: string, res: Response): Promise<void> {
    if (!(await this.slots.take(ownerId, WAIT_MS, MAX_QUEUED))) throw unavailable('this link is busy; retry shortly', 2);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.slots.release(ownerId);
    };
    if (res.writableFinished || res.destroyed) release();
    else res.once('close', release);
  }

  /** Transfers of `ownerId` in progress on this gateway. */
  inUse(ownerId: string): number {
    return this.slots.inUse(ownerId);
  }
}
