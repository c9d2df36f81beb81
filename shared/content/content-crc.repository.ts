import type { Knex } from 'knex';
import { digestsStillStored } from './content.digests';

/**
 * Contents at least this large have their CRC-32 recorded as they are written. Below it, computing
 * the CRC where a ZIP reads the bytes costs less than the statement that would record it.
 */
export const CRC32_MIN_BYTES = 64 * 1024;

/**
 * The only SQL about recorded CRC-32s (table content_crc32, by content digest). A digest's CRC is a
 * function of its bytes, so a row is never wrong, only possibly missing (then computed on read).
 */
export class ContentCrcRepository {
  constructor(private readonly db: Knex) {}

  /** In the transaction that commits the content: kept if the digest has one already. */
  static async record(trx: Knex.Transaction, sha256: string, crc32: number): Promise<void> {
    await trx.raw('INSERT IGNORE INTO content_crc32 (content_sha256, crc32) VALUES (?, ?)', [sha256, crc32 >>> 0]);
  }

  /** The recorded CRC-32s of those of `digests` that have one. */
  async find(digests: string[]): Promise<Map<string, number>> {
    if (digests.length === 0) return new Map();
    const rows = (await this.db('content_crc32').whereIn('content_sha256', digests).select('content_sha256', 'crc32')) as { content_sha256: string; crc32: number }[];
    return new Map(rows.map((r) => [r.content_sha256, r.crc32]));
  }

  /** Digests after `after`, in order, `limit` of them (the sweep's pages). */
  async page(after: string, limit: number): Promise<string[]> {
    const rows = (await this.db('content_crc32').where('content_sha256', '>', after).orderBy('content_sha256').limit(limit).select('content_sha256')) as {
      content_sha256: string;
    }[];
    return rows.map((r) => r.content_sha256);
  }

  stillStored(digests: string[]): Promise<Set<string>> {
    return digestsStillStored(this.db, digests);
  }

  async remove(digests: string[]): Promise<number> {
    if (digests.length === 0) return 0;
    return this.db('content_crc32').whereIn('content_sha256', digests).delete();
  }
}
