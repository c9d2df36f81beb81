import type { Knex } from 'knex';
import { translateResourceWriteError } from '../errors';
import { DerivedData } from '../derived/derived.hooks';
import { changeColumns, type ChangeStamp } from '../owner.transaction';
import { UsageLedger } from '../../quota/usage.ledger';
import { UsageRepository } from '../../quota/usage.repository';
import { VersionRepository } from './version.repository';
import { COLUMNS, toRecord, type PageResult, type ResourceRecord, type ResourceRow } from './resource.record';
import { LinkRepository } from './link.repository';

/** Longest IN list sent in one statement. */
const CHUNK = 1000;

/** A resource due for purging, found across owners by the retention job. */
export interface ExpiredEntry {
  userId: string;
  id: string;
}

/** What a purge took off a resource: the content to remove from disk once the purge commits. */
export interface PurgedEntry {
  id: string;
  storageKey: string | null;
  /** Content of the versions purged with it. */
  versionKeys: string[];
}

/**
 * SQL of the trash. A resource is in the trash while `restorable = 1` (deleted, not purged). A folder
 * delete gives its whole subtree one `deleted_at`, so "deleted with it" is "same deleted_at, below it".
 * Every write also does what every change of a resource does: rev + 1, a new feed position, updated_at.
 */
export class TrashRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  withTransaction(trx: Knex.Transaction): TrashRepository {
    return new TrashRepository(trx);
  }

  private inTrash(userId: string) {
    return this.db('resources').where({ user_id: userId, restorable: 1 });
  }

  /** The owner's trash, newest deletion first, ids picked on ix_resources_trash before rows are read. */
  async list(userId: string, limit: number, offset: number): Promise<PageResult<ResourceRecord>> {
    const order = [
      { column: 'deleted_at', order: 'desc' as const },
      { column: 'id', order: 'asc' as const },
    ];
    const ids = this.inTrash(userId).orderBy(order).limit(limit).offset(offset).select('id');
    const [rows, count] = await Promise.all([
      this.db('resources as r')
        .join(ids.as('page'), 'page.id', 'r.id')
        .orderBy(order.map((o) => ({ column: `r.${o.column}`, order: o.order })))
        .select(COLUMNS.map((c) => `r.${c}`)),
      this.inTrash(userId).count<{ n: number | string }[]>({ n: '*' }),
    ]);
    return { items: (rows as ResourceRow[]).map(toRecord), total: Number(count[0]?.n ?? 0) };
  }

  /** Whether the resource is in the owner's trash, read without a lock. */
  async isInTrash(userId: string, id: string): Promise<boolean> {
    return (await this.inTrash(userId).andWhere({ id }).first('id')) !== undefined;
  }

  /** A resource of the owner's trash, locked for the restore or purge about to change it. */
  async findForUpdate(userId: string, id: string): Promise<ResourceRecord | undefined> {
    const row = (await this.inTrash(userId).andWhere({ id }).forUpdate().first(COLUMNS)) as ResourceRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  /**
   * The resources deleted together with `root` below it: same deleted_at, still in the trash. Walks
   * one level per query (no recursive CTE and so no depth limit), descending only through them, so
   * what was deleted earlier on its own, and anything under it, is left where it is.
   */
  async deletedWith(root: ResourceRecord): Promise<string[]> {
    if (root.type !== 'folder' || root.deletedAt === null) return [];
    const found: string[] = [];
    let level = [root.id];
    while (level.length > 0) {
      const next: string[] = [];
      for (let i = 0; i < level.length; i += CHUNK) {
        const rows = await this.inTrash(root.userId)
          .andWhere({ deleted_at: root.deletedAt })
          .whereIn('parent_id', level.slice(i, i + CHUNK))
          .forUpdate()
          .select<{ id: string; type: string }[]>('id', 'type');
        for (const row of rows) {
          found.push(row.id);
          if (row.type === 'folder') next.push(row.id);
        }
      }
      level = next;
    }
    return found;
  }

  async isActiveFolder(userId: string, id: string): Promise<boolean> {
    const row = await this.db('resources').where({ user_id: userId, id, type: 'folder', alive: 1 }).first('id');
    return row !== undefined;
  }

  /**
   * Makes `rootId` (moved to `parentId`) and `others` active again. A restored name that an active
   * sibling holds breaks the sibling-name key: NAME_CONFLICT, and the caller's transaction undoes all.
   */
  async restore(userId: string, rootId: string, parentId: string | null, others: string[], now: Date, stamp: ChangeStamp): Promise<void> {
    const usage = UsageLedger.of(this.db);
    await usage.settleTrash();
    const bytes = await new UsageRepository(this.db).trashedBytes(userId, [rootId, ...others]);
    try {
      await this.inTrash(userId).andWhere({ id: rootId }).update({ deleted_at: null, parent_id: parentId, ...changeColumns(this.db, now, stamp) });
      for (let i = 0; i < others.length; i += CHUNK) {
        await this.inTrash(userId).whereIn('id', others.slice(i, i + CHUNK)).update({ deleted_at: null, ...changeColumns(this.db, now, stamp) });
      }
    } catch (err) {
      translateResourceWriteError(err);
    }
    // Restored files count in their folders and are found by search again.
    await DerivedData.of(this.db).activated(userId, [rootId, ...others]);
    await usage.add(userId, 'trash', -bytes);
    await usage.add(userId, 'files', bytes);
  }

  /**
   * Turns resources of the trash into tombstones: purged_at set, content detached. Returns the ones it
   * purged with the content they had, which the caller removes from disk after the commit.
   * `deletedBefore` limits it to resources deleted before then (the retention job re-checks under lock).
   * The feed position is taken only when something is purged.
   */
  async purge(userId: string, ids: string[], now: Date, nextStamp: () => ChangeStamp, deletedBefore?: Date): Promise<PurgedEntry[]> {
    const purged: PurgedEntry[] = [];
    const usage = UsageLedger.of(this.db);
    await usage.settleTrash();
    const versions = new VersionRepository(this.db);
    let stamp: ChangeStamp | undefined;
    for (let i = 0; i < ids.length; i += CHUNK) {
      const matching = () => {
        const q = this.inTrash(userId).whereIn('id', ids.slice(i, i + CHUNK));
        if (deletedBefore) q.andWhere('deleted_at', '<', deletedBefore);
        return q;
      };
      const rows = await matching()
        .forUpdate()
        .select<{ id: string; type: string; storage_key: string | null; size_bytes: string | number }[]>('id', 'type', 'storage_key', 'size_bytes');
      if (rows.length === 0) continue;
      stamp ??= nextStamp();
      await this.inTrash(userId)
        .whereIn(
          'id',
          rows.map((r) => r.id),
        )
        .update({ purged_at: now, storage_key: null, ...changeColumns(this.db, now, stamp) });
      // WebDAV dead properties go with the resource they describe.
      await this.db('dav_properties').whereIn(
        'resource_id',
        rows.map((r) => r.id),
      ).del();
      // Share links die with the resource they share, and their devices with them.
      await new LinkRepository(this.db).removeOfResources(rows.map((r) => r.id), now);
      await usage.add(
        userId,
        'trash',
        -rows.reduce((n, r) => n + (r.type === 'file' && r.storage_key ? Number(r.size_bytes) : 0), 0),
      );
      // Purging a file purges its versions.
      const files = rows.filter((r) => r.type === 'file').map((r) => r.id);
      const keysOf = new Map<string, string[]>();
      for (const v of await versions.removeOfFilesWithOwner(userId, files)) keysOf.set(v.fileId, [...(keysOf.get(v.fileId) ?? []), v.storageKey]);
      for (const r of rows) purged.push({ id: r.id, storageKey: r.storage_key, versionKeys: keysOf.get(r.id) ?? [] });
    }
    return purged;
  }

  /** Resources of any owner deleted before `cutoff` and not yet purged, oldest first, on ix_resources_purge. */
  async expired(cutoff: Date, limit: number): Promise<ExpiredEntry[]> {
    const rows = await this.db('resources')
      .where({ restorable: 1 })
      .andWhere('deleted_at', '<', cutoff)
      .orderBy([
        { column: 'deleted_at', order: 'asc' },
        { column: 'id', order: 'asc' },
      ])
      .limit(limit)
      .select<{ id: string; user_id: string }[]>('id', 'user_id');
    return rows.map((r) => ({ id: r.id, userId: r.user_id }));
  }
}
