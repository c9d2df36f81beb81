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
    let held = req.waitMs > 0 ? this.hold(req, deadline) : undefined;
    try {
      for (let woken = false; ; woken = true) {
        // Woken, the page most likely has items: it is read alone, and read again with the position
        // only when it has none.
        let page = held && !woken ? await this.readWatched(req, start, held) : await this.read(req, start);
        if (!held) return page;
        if (page.items.length === 0 && woken) page = await this.readWatched(req, start, held);
        if (page.items.length > 0) return page;
        const outcome = await held.settled;
        if (outcome === 'closing' || req.signal.aborted) return page;
        // A timeout reads once more: a lost notification delays an answer, it never hides a change.
        if (outcome === 'timeout' || Date.now() >= deadline) return this.read(req, start);
        held = this.hold(req, deadline);
      }
    } finally {
      held?.release();
    }
  }

  private hold(req: FeedRequest, deadline: number): HeldRequest {
    const held = this.hub.hold(req.userId, Math.max(0, deadline - Date.now()));
    req.signal.addEventListener('abort', () => held.release(), { once: true });
    return held;
  }

  /** A client with no cursor starts at the beginning and is not shown what is already deleted. */
  private async startOf(userId: string): Promise<FeedCursor> {
    return { position: FEED_START, hideDeletedUpTo: await this.changes.lastSeq(userId) };
  }

  private async read(req: FeedRequest, from: FeedCursor): Promise<FeedPage> {
    return this.pageOf(req, from, await this.changes.changesAfter(req.userId, from.position, from.hideDeletedUpTo, req.limit + 1));
  }

  /**
   * Reads a page for a held request, with the owner's position read just before it: a change that
   * commits after the page either wakes the hold (registered before) or moves the position past the
   * one watched, which the hub's recheck sees should its notification be lost.
   */
  private async readWatched(req: FeedRequest, from: FeedCursor, held: HeldRequest): Promise<FeedPage> {
    const { records, lastSeq } = await this.changes.changesAfterWithPosition(req.userId, from.position, from.hideDeletedUpTo, req.limit + 1);
    held.watchFrom(lastSeq);
    return this.pageOf(req, from, records);
  }

  private pageOf(req: FeedRequest, from: FeedCursor, rows: ResourceRecord[]): FeedPage {
    const items = rows.slice(0, req.limit);
    const last = items[items.length - 1];
    const next: FeedCursor = last ? { ...from, position: { seq: last.changeSeq, id: last.id } } : from;
    return { items, cursor: this.cursors.encode(req.userId, next), hasMore: rows.length > req.limit };
  }
}
