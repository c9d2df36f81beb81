import type { Knex } from 'knex';
import { DerivedData } from '../derived/derived.hooks';
import { translateResourceWriteError } from '../errors';
import { GroupInserts } from '../group.inserts';
import { changeColumns, type ChangeStamp } from '../owner.transaction';
import { TreeRepository } from './tree.repository';
import { UsageLedger } from '../../quota/usage.ledger';
import { COLUMNS, toRecord, type ContentChange, type NewResource, type ResourceRecord, type ResourceRow, type ResourceState, type ResourceType, type SnapshotEntry } from './resource.record';

/** Longest IN list sent in one statement. */
const CHUNK = 1000;

/**
 * The only place with SQL about resources. Every read and write is scoped by the owner's user id;
 * `alive = 1` selects active rows and is the column the indexes are built on.
 */
/** An active resource of a user by id (findActive), the columns of COLUMNS. */
const FIND_ACTIVE = `SELECT ${COLUMNS.map((c) => `\`${c}\``).join(', ')} FROM \`resources\` WHERE \`user_id\` = ? AND \`alive\` = 1 AND \`id\` = ?`;

export class ResourceRepository {
  /** Counts and search index, kept with every write (derived.hooks.ts). */
  private readonly derived: DerivedData;
  /** The owner's byte counters, kept with every write of content (usage.ledger.ts). */
  private readonly usage: UsageLedger;

  constructor(private readonly db: Knex | Knex.Transaction) {
    this.derived = DerivedData.of(db);
    this.usage = UsageLedger.of(db);
  }

  withTransaction(trx: Knex.Transaction): ResourceRepository {
    return new ResourceRepository(trx);
  }

  private active(userId: string) {
    return this.db('resources').where({ user_id: userId, alive: 1 });
  }

  /**
   * Written out rather than built: every download and metadata read makes this lookup, and the
   * query builder's compilation cost the gateway more CPU than the rest of the round trip.
   */
  async findActive(userId: string, id: string, type?: ResourceType): Promise<ResourceRecord | undefined> {
    const [rows] = (await (type
      ? this.db.raw(`${FIND_ACTIVE} AND \`type\` = ? LIMIT 1`, [userId, id, type])
      : this.db.raw(`${FIND_ACTIVE} LIMIT 1`, [userId, id]))) as unknown as [ResourceRow[]];
    const row = rows[0];
    return row ? toRecord(row) : undefined;
  }

  /** The caller's active files among `ids`, by id, in one statement per CHUNK ids (found by primary key). */
  async findActiveFiles(userId: string, ids: readonly string[]): Promise<Map<string, ResourceRecord>> {
    const found = new Map<string, ResourceRecord>();
    for (let i = 0; i < ids.length; i += CHUNK) {
      const chunk = ids.slice(i, i + CHUNK);
      const [rows] = (await this.db.raw(
        `SELECT ${COLUMNS.map((c) => `\`${c}\``).join(', ')} FROM \`resources\` FORCE INDEX (PRIMARY)
         WHERE \`id\` IN (${chunk.map(() => '?').join(',')}) AND \`user_id\` = ? AND \`alive\` = 1 AND \`type\` = 'file'`,
        [...chunk, userId],
      )) as unknown as [ResourceRow[]];
      for (const row of rows) {
        const record = toRecord(row);
        found.set(record.id, record);
      }
    }
    return found;
  }

  /** Inserts a resource; a sibling-name clash is NAME_CONFLICT, a taken id INVALID_REQUEST. */
  insert(r: NewResource): Promise<void> {
    return this.insertMany([r]);
  }

  /**
   * Inserts resources in one statement, in order: all of them or, on any error, none. Within an
   * optimistic group of writes (group.inserts.ts) the rows wait for the group's one statement; the
   * counts and byte counters are taken at once either way.
   */
  async insertMany(rows: NewResource[]): Promise<void> {
    const group = GroupInserts.of(this.db);
    if (group) for (const r of rows) group.add('resources', r, (queued) => this.writeRows(queued));
    else await this.writeRows(rows);
    for (const userId of new Set(rows.map((r) => r.userId))) {
      const files = rows.filter((r) => r.userId === userId && r.type === 'file');
      await this.derived.activated(userId, files.map((r) => r.id));
      // A file without content (created by a sync op, whatever size it declares) holds no bytes.
      await this.usage.add(userId, 'files', files.reduce((n, r) => n + (r.storageKey ? r.sizeBytes : 0), 0));
    }
  }

  private async writeRows(rows: NewResource[]): Promise<void> {
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
          change_seq: r.change.seq,
          change_device_id: r.change.deviceId,
          content_at: r.storageKey ? (r.contentAt ?? r.createdAt) : null,
          content_device_id: r.storageKey ? (r.contentDeviceId ?? null) : null,
        })),
      );
    } catch (err) {
      translateResourceWriteError(err);
    }
  }

  async rename(userId: string, id: string, name: string, now: Date, stamp: ChangeStamp): Promise<boolean> {
    try {
      const update = () => this.active(userId).andWhere({ id }).update({ name, ...changeColumns(this.db, now, stamp) });
      return (await this.derived.renaming(userId, [id], update)) > 0;
    } catch (err) {
      translateResourceWriteError(err);
    }
  }

  async move(userId: string, id: string, parentId: string | null, now: Date, stamp: ChangeStamp): Promise<boolean> {
    try {
      const update = () => this.active(userId).andWhere({ id }).update({ parent_id: parentId, ...changeColumns(this.db, now, stamp) });
      return (await this.derived.moving(userId, [id], update)) > 0;
    } catch (err) {
      translateResourceWriteError(err);
    }
  }

  async softDeleteFile(userId: string, id: string, now: Date, stamp: ChangeStamp): Promise<boolean> {
    await this.derived.deactivating(userId, [id]);
    const n = await this.active(userId).andWhere({ id, type: 'file' }).update({ deleted_at: now, ...changeColumns(this.db, now, stamp) });
    if (n > 0) await this.usage.trashed(userId, [id]);
    return n > 0;
  }

  /**
   * Points an active file at new content; the caller keeps or removes the old bytes once this commits.
   * `replaced` is the content the file had, as read under the owner's lock in this transaction.
   */
  async replaceContent(
    userId: string,
    id: string,
    content: ContentChange,
    replaced: Pick<ResourceRecord, 'storageKey' | 'sizeBytes'>,
    now: Date,
    stamp: ChangeStamp,
  ): Promise<boolean> {
    const n = await this.active(userId)
      .andWhere({ id, type: 'file' })
      .update({
        storage_key: content.storageKey,
        size_bytes: content.sizeBytes,
        content_sha256: content.contentSha256,
        mime_type: content.mimeType,
        extension: content.extension,
        content_at: now,
        content_device_id: content.deviceId,
        ...changeColumns(this.db, now, stamp),
      });
    if (n > 0) await this.usage.add(userId, 'files', content.sizeBytes - (replaced.storageKey ? replaced.sizeBytes : 0));
    return n > 0;
  }

  /**
   * Soft-deletes a resource and, for a folder, every active descendant, all with the same timestamp.
   * The walk has no depth limit (see TreeRepository); returns the ids it deleted.
   */
  async softDeleteTree(userId: string, rootId: string, now: Date, stamp: ChangeStamp): Promise<string[]> {
    const all = await new TreeRepository(this.db).activeSubtree(userId, rootId);
    await this.derived.deactivating(userId, all);
    for (let i = 0; i < all.length; i += CHUNK) {
      await this.active(userId).whereIn('id', all.slice(i, i + CHUNK)).update({ deleted_at: now, ...changeColumns(this.db, now, stamp) });
    }
    await this.usage.trashed(userId, all);
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
        .select<{ id: string; user_id: string; parent_id: string | null; type: ResourceType; deleted_at: Date | null; rev: number }[]>(
          'id',
          'user_id',
          'parent_id',
          'type',
          'deleted_at',
          'rev',
        );
      for (const r of rows) {
        states.set(r.id, { id: r.id, userId: r.user_id, parentId: r.parent_id, type: r.type, deleted: r.deleted_at !== null, rev: Number(r.rev) });
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
