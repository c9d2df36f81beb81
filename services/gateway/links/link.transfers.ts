import { TransferSlots } from '../http/transfer.slots';

/**
 * Per-owner slots for the transfers of share links (content, archives, uploads) on one gateway: a
 * link shared widely gets at most LINK_TRANSFERS_PER_OWNER transfers at once, and its crowd waits for
 * those (then 503 with Retry-After) instead of taking the gateway's sockets, store connections and
 * event loop from everyone else. The owner's own requests do not take these slots.
 */
export class LinkTransfers extends TransferSlots {
  constructor(perOwner: number) {
    super(perOwner, 'this link is busy; retry shortly');
  }
}
