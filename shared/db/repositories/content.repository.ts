import type { Knex } from 'knex';
import { UsageLedger } from '../../quota/usage.ledger';
import { changeColumns, type ChangeStamp } from '../owner.transaction';

/** Longest IN list sent in one statement. */
const CHUNK = 1000;

/** A resource that should have content on disk: active, or in the trash (restorable). */
export interface ContentHolder {
  id: string;
  userId: string;
  storageKey: string;
}

/**
 * SQL of the consistency check between rows and content files, and of the store's identity. A row
 * holds content while its storage_key is set; purged tombstones have none.
 */
export class ContentRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  withTransaction(trx: Knex.Transaction): ContentRepository {
    return new ContentRepository(trx);
  }

  /** Which of these storage keys some resource or kept version points at (ix_resources_storage, ix_file_versions_storage). */
  async referenced(keys: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let i = 0; i < keys.length; i += CHUNK) {
      const chunk = keys.slice(i, i + CHUNK);
      const rows = await this.db('resources').whereIn('storage_key', chunk).select<{ storage_key: string }[]>('storage_key');
      for (const r of rows) found.add(r.storage_key);
      const versions = await this.db('file_versions').whereIn('storage_key', chunk).select<{ storage_key: string }[]>('storage_key');
      for (const r of versions) found.add(r.storage_key);
    }
    return found;
  }

  /** Resources with content, in id order after `afterId`, at most `limit`: a keyset walk of the table. */
  async holders(afterId: string, limit: number): Promise<ContentHolder[]> {
    const rows = await this.db('resources')
      .whereNotNull('storage_key')
      .andWhere('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .select<{ id: string; user_id: string; storage_key: string }[]>('id', 'user_id', 'storage_key');
    return rows.map((r) => ({ id: r.id, userId: r.user_id, storageKey: r.storage_key }));
  }

  /** Kept versions, in id order after `afterId`, at most `limit` (`id` is the version's). */
  async versionHolders(afterId: string, limit: number): Promise<ContentHolder[]> {
    const rows = await this.db('file_versions')
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .select<{ id: string; user_id: string; storage_key: string }[]>('id', 'user_id', 'storage_key');
    return rows.map((r) => ({ id: r.id, userId: r.user_id, storageKey: r.storage_key }));
  }

  /** Whether the version still exists with that key. */
  async versionHolds(id: string, storageKey: string): Promise<boolean> {
    return (await this.db('file_versions').where({ id, storage_key: storageKey }).first('id')) !== undefined;
  }

  /** The resource's storage key now (undefined when it has none any more). */
  async storageKeyOf(id: string): Promise<string | undefined> {
    const row = await this.db('resources').where({ id }).first<{ storage_key: string | null } | undefined>('storage_key');
    return row?.storage_key ?? undefined;
  }

  /**
   * Detaches content that is gone from disk: the file keeps its row and name, and reads as a file
   * without content (no sha256, size 0), as one created by a sync op. Only while it still points at
   * `storageKey`, so content replaced meanwhile is left alone. A change like any other: rev, feed.
   */
  async clearContent(userId: string, id: string, storageKey: string, now: Date, stamp: ChangeStamp): Promise<boolean> {
    const usage = UsageLedger.of(this.db);
    await usage.settleTrash();
    const row = await this.db('resources')
      .where({ user_id: userId, id, storage_key: storageKey })
      .forUpdate()
      .first<{ size_bytes: string | number; alive: number | null } | undefined>('size_bytes', 'alive');
    if (!row) return false;
    const n = await this.db('resources')
      .where({ user_id: userId, id, storage_key: storageKey })
      .update({ storage_key: null, size_bytes: 0, content_sha256: null, ...changeColumns(this.db, now, stamp) });
    if (n > 0) await usage.add(userId, row.alive === 1 ? 'files' : 'trash', -Number(row.size_bytes));
    return n > 0;
  }

  /** The content store id recorded for this database; undefined before its first start with a store. */
  async recordedStoreId(): Promise<string | undefined> {
    const row = await this.db('content_store').where({ singleton: 1 }).first<{ store_id: string } | undefined>('store_id');
    return row?.store_id;
  }

  /** Records `storeId` unless an id is recorded already (another process starting at once); returns the one recorded. */
  async recordStoreId(storeId: string): Promise<string> {
    await this.db.raw('INSERT IGNORE INTO content_store (singleton, store_id, created_at) VALUES (1, ?, ?)', [storeId, new Date()]);
    return (await this.recordedStoreId()) as string;
  }

  /** Storage keys of up to `limit` resources that hold content (active or in the trash). */
  async someStorageKeys(limit: number): Promise<string[]> {
    const rows = await this.db('resources').whereNotNull('storage_key').limit(limit).select<{ storage_key: string }[]>('storage_key');
    return rows.map((r) => r.storage_key);
  }
}
