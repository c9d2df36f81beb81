import type { Knex } from 'knex';
import { translateResourceWriteError } from './errors';
import { changeColumns } from './owner.transaction';
import { TreeRepository } from './tree.repository';

export type ResourceType = 'file' | 'folder';

export interface ResourceRecord {
  id: string;
  userId: string;
  parentId: string | null;
  type: ResourceType;
  name: string;
  sizeBytes: number;
  mimeType: string | null;
  extension: string | null;
  storageKey: string | null;
  contentSha256: string | null;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
  /** 1 at creation, one more with every change. */
  rev: number;
  /** Position of the latest change in the owner's change feed. */
  changeSeq: number;
}

export type NewResource = Omit<ResourceRecord, 'updatedAt' | 'deletedAt' | 'rev'>;

/** New content of a file, already in place on disk under `storageKey`. */
export interface ContentChange {
  storageKey: string;
  sizeBytes: number;
  contentSha256: string;
  mimeType: string | null;
  extension: string | null;
}

/** The little the sync worker needs to know about a resource to decide what an op does. */
export interface ResourceState {
  id: string;
  userId: string;
  parentId: string | null;
  type: ResourceType;
  deleted: boolean;
}

export type FileSortColumn = 'created_at' | 'updated_at' | 'size_bytes';

export interface ListQuery {
  sort: FileSortColumn;
  descending: boolean;
  limit: number;
  offset: number;
}

export interface PageResult<T> {
  items: T[];
  total: number;
}

export interface SnapshotEntry {
  id: string;
  type: ResourceType;
  name: string;
  parentId: string | null;
  updatedAt: Date;
  rev: number;
}

export interface ResourceRow {
  id: string;
  user_id: string;
  parent_id: string | null;
  type: ResourceType;
  name: string;
  size_bytes: string | number;
  mime_type: string | null;
  extension: string | null;
  storage_key: string | null;
  content_sha256: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
  rev: number;
  change_seq: string | number;
}

export const COLUMNS = [
  'id',
  'user_id',
  'parent_id',
  'type',
  'name',
  'size_bytes',
  'mime_type',
  'extension',
  'storage_key',
  'content_sha256',
  'created_at',
  'updated_at',
  'deleted_at',
  'rev',
  'change_seq',
];

export const toRecord = (row: ResourceRow): ResourceRecord => ({
  id: row.id,
  userId: row.user_id,
  parentId: row.parent_id,
  type: row.type,
  name: row.name,
  sizeBytes: Number(row.size_bytes),
  mimeType: row.mime_type,
  extension: row.extension,
  storageKey: row.storage_key,
  contentSha256: row.content_sha256,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  deletedAt: row.deleted_at,
  rev: Number(row.rev),
  changeSeq: Number(row.change_seq),
});

/** Escapes LIKE wildcards with '!' so that '%', '_' and '\' in a search are literal characters. */
export function likeContains(text: string): string {
  return `%${text.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

/** Longest IN list sent in one statement. */
const CHUNK = 1000;

/**
 * The only place with SQL about resources. Every read and write is scoped by the owner's user id;
 * `alive = 1` selects active rows and is the column the indexes are built on.
 */
export class ResourceRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  withTransaction(trx: Knex.Transaction): ResourceRepository {
    return new ResourceRepository(trx);
  }

  private active(userId: string) {
    return this.db('resources').where({ user_id: userId, alive: 1 });
  }

  async findActive(userId: string, id: string, type?: ResourceType): Promise<ResourceRecord | undefined> {
    const q = this.active(userId).andWhere({ id });
    if (type) q.andWhere({ type });
    const row = (await q.first(COLUMNS)) as ResourceRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  async listFiles(userId: string, parentId: string | null, q: ListQuery): Promise<PageResult<ResourceRecord>> {
    const direction = q.descending ? 'desc' : 'asc';
    return this.page(
      () => this.db('resources').where({ user_id: userId, parent_key: parentId ?? '', type: 'file', alive: 1 }),
      [
        { column: q.sort, order: direction },
        { column: 'id', order: direction },
      ],
      q.limit,
      q.offset,
    );
  }

  /** Case-insensitive substring search on names; LOWER on both sides keeps accents significant. */
  async searchFiles(userId: string, text: string, limit: number, offset: number): Promise<PageResult<ResourceRecord>> {
    return this.page(
      () =>
        this.db('resources')
          .where({ user_id: userId, type: 'file', alive: 1 })
          .andWhereRaw("LOWER(name) LIKE LOWER(?) ESCAPE '!'", [likeContains(text)]),
      [
        { column: 'name', order: 'asc' },
        { column: 'id', order: 'asc' },
      ],
      limit,
      offset,
    );
  }

  /**
   * One page and the total. The page is a deferred join: the ids are picked on the covering index
   * (filter, order, offset), and only the rows of the page are read in full.
   */
  private async page(
    matching: () => Knex.QueryBuilder,
    order: { column: string; order: 'asc' | 'desc' }[],
    limit: number,
    offset: number,
  ): Promise<PageResult<ResourceRecord>> {
    const ids = matching().orderBy(order).limit(limit).offset(offset).select('id');
    const [rows, count] = await Promise.all([
      this.db('resources as r')
        .join(ids.as('page'), 'page.id', 'r.id')
        .orderBy(order.map((o) => ({ column: `r.${o.column}`, order: o.order })))
        .select(COLUMNS.map((c) => `r.${c}`)),
      matching().count<{ n: number | string }[]>({ n: '*' }),
    ]);
    return { items: (rows as ResourceRow[]).map(toRecord), total: Number(count[0]?.n ?? 0) };
  }

  async listFolders(userId: string, parentId: string | null): Promise<ResourceRecord[]> {
    const rows = await this.db('resources')
      .where({ user_id: userId, parent_key: parentId ?? '', type: 'folder', alive: 1 })
      .orderBy([{ column: 'name' }, { column: 'id' }])
      .select(COLUMNS);
    return (rows as ResourceRow[]).map(toRecord);
  }

  /** Inserts a resource; a sibling-name clash is NAME_CONFLICT, a taken id INVALID_REQUEST. */
  insert(r: NewResource): Promise<void> {
    return this.insertMany([r]);
  }

  /** Inserts resources in one statement, in order: all of them or, on any error, none. */
  async insertMany(rows: NewResource[]): Promise<void> {
    try {
      await this.db('resources').insert(
        rows.map((r) => ({
          id: r.id,
          user_id: r.userId,
          parent_id: r.parentId,
          type: r.type,
          name: r.name,
          size_bytes: r.sizeBytes,
          mime_type: r.mimeType,
          extension: r.extension,
          storage_key: r.storageKey,
          content_sha256: r.contentSha256,
          created_at: r.createdAt,
          updated_at: r.createdAt,
          change_seq: r.changeSeq,
        })),
      );
    } catch (err) {
      translateResourceWriteError(err);
    }
  }

  async rename(userId: string, id: string, name: string, now: Date, seq: number): Promise<boolean> {
    try {
      return (await this.active(userId).andWhere({ id }).update({ name, ...changeColumns(this.db, now, seq) })) > 0;
    } catch (err) {
      translateResourceWriteError(err);
    }
  }

  async move(userId: string, id: string, parentId: string | null, now: Date, seq: number): Promise<boolean> {
    try {
      return (await this.active(userId).andWhere({ id }).update({ parent_id: parentId, ...changeColumns(this.db, now, seq) })) > 0;
    } catch (err) {
      translateResourceWriteError(err);
    }
  }

  async softDeleteFile(userId: string, id: string, now: Date, seq: number): Promise<boolean> {
    const n = await this.active(userId).andWhere({ id, type: 'file' }).update({ deleted_at: now, ...changeColumns(this.db, now, seq) });
    return n > 0;
  }

  /** Points an active file at new content; the caller removes the old bytes once this commits. */
  async replaceContent(userId: string, id: string, content: ContentChange, now: Date, seq: number): Promise<boolean> {
    const n = await this.active(userId)
      .andWhere({ id, type: 'file' })
      .update({
        storage_key: content.storageKey,
        size_bytes: content.sizeBytes,
        content_sha256: content.contentSha256,
        mime_type: content.mimeType,
        extension: content.extension,
        ...changeColumns(this.db, now, seq),
      });
    return n > 0;
  }

  /**
   * Soft-deletes a resource and, for a folder, every active descendant, all with the same timestamp.
   * The walk has no depth limit (see TreeRepository); returns the ids it deleted.
   */
  async softDeleteTree(userId: string, rootId: string, now: Date, seq: number): Promise<string[]> {
    const all = await new TreeRepository(this.db).activeSubtree(userId, rootId);
    for (let i = 0; i < all.length; i += CHUNK) {
      await this.active(userId).whereIn('id', all.slice(i, i + CHUNK)).update({ deleted_at: now, ...changeColumns(this.db, now, seq) });
    }
    return all;
  }

  /** True when `candidateId` is `folderId` itself or one of its ancestors, i.e. moving it there would make a cycle. */
  isSelfOrAncestor(userId: string, folderId: string, candidateId: string): Promise<boolean> {
    return new TreeRepository(this.db).isSelfOrAncestor(userId, folderId, candidateId);
  }

  /** The state of every named resource, any owner, active or deleted, in one query. */
  async statesOf(ids: string[]): Promise<Map<string, ResourceState>> {
    const states = new Map<string, ResourceState>();
    for (let i = 0; i < ids.length; i += CHUNK) {
      const rows = await this.db('resources')
        .whereIn('id', ids.slice(i, i + CHUNK))
        .select<{ id: string; user_id: string; parent_id: string | null; type: ResourceType; deleted_at: Date | null }[]>(
          'id',
          'user_id',
          'parent_id',
          'type',
          'deleted_at',
        );
      for (const r of rows) {
        states.set(r.id, { id: r.id, userId: r.user_id, parentId: r.parent_id, type: r.type, deleted: r.deleted_at !== null });
      }
    }
    return states;
  }

  /** Active resources changed after `afterMs`, newest first, at most `limit`. */
  async changedSince(userId: string, afterMs: number, limit: number): Promise<SnapshotEntry[]> {
    const rows = await this.active(userId)
      .andWhere('updated_at', '>', new Date(afterMs))
      .orderBy([{ column: 'updated_at', order: 'desc' }, { column: 'id', order: 'asc' }])
      .limit(limit)
      .select<{ id: string; type: ResourceType; name: string; parent_id: string | null; updated_at: Date; rev: number }[]>(
        'id',
        'type',
        'name',
        'parent_id',
        'updated_at',
        'rev',
      );
    return rows.map((r) => ({ id: r.id, type: r.type, name: r.name, parentId: r.parent_id, updatedAt: r.updated_at, rev: Number(r.rev) }));
  }
}
