import type { Knex } from 'knex';
import type { PageResult } from './resource.record';
import { UsageLedger } from '../../quota/usage.ledger';

/** Longest IN list sent in one statement. */
const CHUNK = 1000;

/** Content a file had before it was replaced, kept under a storage key of its own. */
export interface VersionRecord {
  id: string;
  userId: string;
  fileId: string;
  storageKey: string;
  sizeBytes: number;
  contentSha256: string;
  mimeType: string | null;
  /** The device that wrote this content; '' when unknown. */
  deviceId: string;
  /** When this content was written. */
  createdAt: Date;
  /** When it stopped being the file's content. */
  replacedAt: Date;
}

/** A version removed by a write: its bytes leave the store once the write commits. */
export interface DroppedVersion {
  id: string;
  storageKey: string;
}

/** A version due for expiry, found across owners by the scheduled job. */
export interface ExpiredVersion {
  userId: string;
  id: string;
}

interface VersionRow {
  id: string;
  user_id: string;
  file_id: string;
  storage_key: string;
  size_bytes: string | number;
  content_sha256: string;
  mime_type: string | null;
  device_id: string;
  created_at: Date;
  replaced_at: Date;
}

const COLUMNS = ['id', 'user_id', 'file_id', 'storage_key', 'size_bytes', 'content_sha256', 'mime_type', 'device_id', 'created_at', 'replaced_at'];

const toVersion = (r: VersionRow): VersionRecord => ({
  id: r.id,
  userId: r.user_id,
  fileId: r.file_id,
  storageKey: r.storage_key,
  sizeBytes: Number(r.size_bytes),
  contentSha256: r.content_sha256,
  mimeType: r.mime_type,
  deviceId: r.device_id,
  createdAt: r.created_at,
  replacedAt: r.replaced_at,
});

const NEWEST_FIRST = [
  { column: 'replaced_at', order: 'desc' as const },
  { column: 'id', order: 'asc' as const },
];
const OLDEST_FIRST = [
  { column: 'replaced_at', order: 'asc' as const },
  { column: 'id', order: 'asc' as const },
];

/**
 * The only SQL about versions. Every read and write is scoped by the owner's user id; every write
 * that adds or removes a version moves its bytes in the owner's counters (usage.ledger.ts), in the
 * caller's transaction.
 */
export class VersionRepository {
  private readonly ledger: UsageLedger;

  constructor(private readonly db: Knex | Knex.Transaction) {
    this.ledger = UsageLedger.of(db);
  }

  withTransaction(trx: Knex.Transaction): VersionRepository {
    return new VersionRepository(trx);
  }

  private ofUser(userId: string) {
    return this.db('file_versions').where({ user_id: userId });
  }

  async keep(v: VersionRecord): Promise<void> {
    await this.db('file_versions').insert({
      id: v.id,
      user_id: v.userId,
      file_id: v.fileId,
      storage_key: v.storageKey,
      size_bytes: v.sizeBytes,
      content_sha256: v.contentSha256,
      mime_type: v.mimeType,
      device_id: v.deviceId,
      created_at: v.createdAt,
      replaced_at: v.replacedAt,
    });
    await this.ledger.add(v.userId, 'versions', v.sizeBytes);
  }

  /** A file's versions, most recently replaced first. */
  async list(userId: string, fileId: string, limit: number, offset: number): Promise<PageResult<VersionRecord>> {
    const [rows, count] = await Promise.all([
      this.ofUser(userId).andWhere({ file_id: fileId }).orderBy(NEWEST_FIRST).limit(limit).offset(offset).select(COLUMNS),
      this.ofUser(userId).andWhere({ file_id: fileId }).count<{ n: number | string }[]>({ n: '*' }),
    ]);
    return { items: (rows as VersionRow[]).map(toVersion), total: Number(count[0]?.n ?? 0) };
  }

  async find(userId: string, fileId: string, id: string): Promise<VersionRecord | undefined> {
    const row = (await this.ofUser(userId).andWhere({ file_id: fileId, id }).first(COLUMNS)) as VersionRow | undefined;
    return row ? toVersion(row) : undefined;
  }

  /** The ids of a file's versions beyond the `keep` most recently replaced. */
  async beyond(userId: string, fileId: string, keep: number): Promise<string[]> {
    const rows = await this.ofUser(userId).andWhere({ file_id: fileId }).orderBy(NEWEST_FIRST).offset(keep).limit(CHUNK).select<{ id: string }[]>('id');
    return rows.map((r) => r.id);
  }

  /** The owner's least recently replaced versions, at most `limit`. */
  async oldest(userId: string, limit: number): Promise<Array<{ id: string; sizeBytes: number }>> {
    const rows = await this.ofUser(userId).orderBy(OLDEST_FIRST).limit(limit).select<{ id: string; size_bytes: string | number }[]>('id', 'size_bytes');
    return rows.map((r) => ({ id: r.id, sizeBytes: Number(r.size_bytes) }));
  }

  /** Removes versions of the owner (those still there), moving their bytes out of the counters. */
  async remove(userId: string, ids: string[]): Promise<DroppedVersion[]> {
    const dropped: DroppedVersion[] = [];
    for (let i = 0; i < ids.length; i += CHUNK) {
      const rows = await this.ofUser(userId)
        .whereIn('id', ids.slice(i, i + CHUNK))
        .forUpdate()
        .select<{ id: string; storage_key: string; size_bytes: string | number }[]>('id', 'storage_key', 'size_bytes');
      if (rows.length === 0) continue;
      await this.ofUser(userId)
        .whereIn(
          'id',
          rows.map((r) => r.id),
        )
        .delete();
      await this.ledger.add(
        userId,
        'versions',
        -rows.reduce((n, r) => n + Number(r.size_bytes), 0),
      );
      for (const r of rows) dropped.push({ id: r.id, storageKey: r.storage_key });
    }
    return dropped;
  }

  /** Removes every version of these files (a purge); says which file each belonged to. */
  async removeOfFilesWithOwner(userId: string, fileIds: string[]): Promise<Array<DroppedVersion & { fileId: string }>> {
    const fileOf = new Map<string, string>();
    for (let i = 0; i < fileIds.length; i += CHUNK) {
      const rows = await this.ofUser(userId).whereIn('file_id', fileIds.slice(i, i + CHUNK)).select<{ id: string; file_id: string }[]>('id', 'file_id');
      for (const r of rows) fileOf.set(r.id, r.file_id);
    }
    if (fileOf.size === 0) return [];
    return (await this.remove(userId, [...fileOf.keys()])).map((v) => ({ ...v, fileId: fileOf.get(v.id)! }));
  }

  /** Versions of any owner replaced before `cutoff`, oldest first. */
  async expired(cutoff: Date, limit: number): Promise<ExpiredVersion[]> {
    const rows = await this.db('file_versions')
      .where('replaced_at', '<', cutoff)
      .orderBy(OLDEST_FIRST)
      .limit(limit)
      .select<{ id: string; user_id: string }[]>('id', 'user_id');
    return rows.map((r) => ({ id: r.id, userId: r.user_id }));
  }

  /** Files of any owner with more than `max` versions, at most `limit` of them. */
  async overCap(max: number, limit: number): Promise<Array<{ userId: string; fileId: string }>> {
    const rows = await this.db('file_versions')
      .groupBy('user_id', 'file_id')
      .havingRaw('COUNT(*) > ?', [max])
      .limit(limit)
      .select<{ user_id: string; file_id: string }[]>('user_id', 'file_id');
    return rows.map((r) => ({ userId: r.user_id, fileId: r.file_id }));
  }

  /** Which of these storage keys some version points at (ix_file_versions_storage). */
  async referenced(keys: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let i = 0; i < keys.length; i += CHUNK) {
      const rows = await this.db('file_versions').whereIn('storage_key', keys.slice(i, i + CHUNK)).select<{ storage_key: string }[]>('storage_key');
      for (const r of rows) found.add(r.storage_key);
    }
    return found;
  }
}
