import { FEED_START, type ChangeRepository } from '../../../shared/db/repositories/change.repository';
import type { ResourceRecord } from '../../../shared/db/repositories/resource.record';
import type { ChangeHub, HeldRequest } from './change.hub';
import type { CursorCodec, FeedCursor } from './feed.cursor';

export type { ResourceRecord };

export interface FeedPage {
  items: ResourceRecord[];
  cursor: string;
  hasMore: boolean;
}

export interface FeedRequest {
  userId: string;
  cursor: string | undefined;
  limit: number;
  waitMs: number;
  /** Aborted when the client goes away while its request is held. */
  signal: AbortSignal;
}

/**
 * The change feed: pages of the resources an owner changed after a cursor, in commit order, and a
 * long poll that holds an empty answer until a change commits. The hold is registered before the
 * feed is read, so a change that commits in between still wakes it.
 */
export class ChangesService {
  constructor(
    private readonly changes: ChangeRepository,
    private readonly hub: ChangeHub,
    private readonly cursors: CursorCodec,
  ) {}

  async feed(req: FeedRequest): Promise<FeedPage> {
    const start = req.cursor === undefined ? await this.startOf(req.userId) : this.cursors.decode(req.userId, req.cursor);
    const deadline = Date.now() + req.waitMs;
    let held: HeldRequest | undefined;
    try {
      if (req.waitMs > 0) held = await this.hold(req, deadline);
      for (;;) {
        const page = await this.read(req, start);
        if (page.items.length > 0 || !held) return page;
        const outcome = await held.settled;
        if (outcome === 'closing' || req.signal.aborted) return page;
        // A timeout reads once more: a lost notification delays an answer, it never hides a change.
        if (outcome === 'timeout' || Date.now() >= deadline) return this.read(req, start);
        held = await this.hold(req, deadline);
      }
    } finally {
      held?.release();
    }
  }

  /**
   * Registers the wait, then reads the owner's position, then (the caller) the feed: a change that
   * commits after the feed was read either notifies the hold or moves the position past the one
   * read here, which the hub's recheck sees.
   */
  private async hold(req: FeedRequest, deadline: number): Promise<HeldRequest> {
    const held = this.hub.hold(req.userId, Math.max(0, deadline - Date.now()));
    req.signal.addEventListener('abort', () => held.release(), { once: true });
    try {
      held.watchFrom(await this.changes.lastSeq(req.userId));
    } catch (err) {
      held.release();
      throw err;
    }
    return held;
  }

  /** A client with no cursor starts at the beginning and is not shown what is already deleted. */
  private async startOf(userId: string): Promise<FeedCursor> {
    return { position: FEED_START, hideDeletedUpTo: await this.changes.lastSeq(userId) };
  }

  private async read(req: FeedRequest, from: FeedCursor): Promise<FeedPage> {
    const rows = await this.changes.changesAfter(req.userId, from.position, from.hideDeletedUpTo, req.limit + 1);
    const items = rows.slice(0, req.limit);
    const last = items[items.length - 1];
    const next: FeedCursor = last ? { ...from, position: { seq: last.changeSeq, id: last.id } } : from;
    return { items, cursor: this.cursors.encode(req.userId, next), hasMore: rows.length > req.limit };
  }
}
