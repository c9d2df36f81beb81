import type { Knex } from 'knex';
import { UsageLedger } from './usage.ledger';

/** A reservation found across owners by the expiry job. */
export interface ReservationEntry {
  uploadId: string;
  userId: string;
}

/**
 * SQL of upload_reservations: the Upload-Length of each unfinished resumable upload, held in the
 * owner's `uploads` counter (usage.ledger.ts) from its creation until it finishes, is terminated or
 * expires. Writes run in the owner's transaction.
 */
export class ReservationRepository {
  private readonly ledger: UsageLedger;

  constructor(private readonly db: Knex | Knex.Transaction) {
    this.ledger = UsageLedger.of(db);
  }

  async reserve(userId: string, uploadId: string, bytes: number, now: Date): Promise<void> {
    await this.db('upload_reservations').insert({ upload_id: uploadId, user_id: userId, bytes, created_at: now });
    await this.ledger.add(userId, 'uploads', bytes);
  }

  /** Ends the reservation when it is still there; the bytes it held (0 when there was none). */
  async release(userId: string, uploadId: string): Promise<number> {
    const row = await this.db('upload_reservations')
      .where({ upload_id: uploadId, user_id: userId })
      .forUpdate()
      .first<{ bytes: string | number } | undefined>('bytes');
    if (!row) return 0;
    await this.db('upload_reservations').where({ upload_id: uploadId, user_id: userId }).delete();
    await this.ledger.add(userId, 'uploads', -Number(row.bytes));
    return Number(row.bytes);
  }

  async ownerOf(uploadId: string): Promise<string | undefined> {
    const row = await this.db('upload_reservations').where({ upload_id: uploadId }).first<{ user_id: string } | undefined>('user_id');
    return row?.user_id;
  }

  /** Reservations of any owner made before `cutoff`, oldest first. */
  async expired(cutoff: Date, limit: number): Promise<ReservationEntry[]> {
    const rows = await this.db('upload_reservations')
      .where('created_at', '<', cutoff)
      .orderBy([
        { column: 'created_at', order: 'asc' },
        { column: 'upload_id', order: 'asc' },
      ])
      .limit(limit)
      .select<{ upload_id: string; user_id: string }[]>('upload_id', 'user_id');
    return rows.map((r) => ({ uploadId: r.upload_id, userId: r.user_id }));
  }
}
