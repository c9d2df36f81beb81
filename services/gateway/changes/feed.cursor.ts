import { createHmac, timingSafeEqual } from 'node:crypto';
import { invalid } from '../../../shared/errors';
import type { FeedPosition } from '../../../shared/db/repositories/change.repository';

/** Where a client stands in its feed, and up to which position deleted resources stay hidden. */
export interface FeedCursor {
  position: FeedPosition;
  hideDeletedUpTo: number;
}

const MAC_BYTES = 16;

/**
 * Cursors are opaque to clients and bound to their user: the position travels with an HMAC over the
 * user id, so a cursor that was altered, invented or issued to someone else is refused.
 */
export class CursorCodec {
  constructor(private readonly secret: string) {}

  encode(userId: string, cursor: FeedCursor): string {
    const body = `${cursor.position.seq}.${cursor.position.id}.${cursor.hideDeletedUpTo}`;
    return Buffer.concat([Buffer.from(body), Buffer.from('.'), this.mac(userId, body)]).toString('base64url');
  }

  decode(userId: string, text: string): FeedCursor {
    const refused = () => invalid('cursor is not one this service issued to you; start again without a cursor');
    if (text.length > 200 || !/^[A-Za-z0-9_-]+$/.test(text)) throw refused();
    const raw = Buffer.from(text, 'base64url');
    const dot = raw.length - MAC_BYTES - 1;
    if (dot < 1 || raw[dot] !== 0x2e) throw refused();
    const body = raw.subarray(0, dot).toString('latin1');
    if (!timingSafeEqual(raw.subarray(dot + 1), this.mac(userId, body))) throw refused();
    const match = /^(\d{1,15})\.([0-9a-f]{32}|)\.(\d{1,15})$/.exec(body);
    if (!match) throw refused();
    return { position: { seq: Number(match[1]), id: match[2]! }, hideDeletedUpTo: Number(match[3]) };
  }

  private mac(userId: string, body: string): Buffer {
    return createHmac('sha256', this.secret).update(`feed-cursor\n${userId}\n${body}`).digest().subarray(0, MAC_BYTES);
  }
}
