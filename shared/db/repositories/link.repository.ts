import type { Knex } from 'knex';
import { DeviceRepository } from './device.repository';
import type { PageResult, ResourceType } from './resource.record';

export type LinkAccess = 'read' | 'upload';

export interface LinkRecord {
  id: string;
  userId: string;
  deviceId: string;
  resourceId: string;
  resourceType: ResourceType;
  token: string;
  access: LinkAccess;
  passwordHash: string | null;
  passwordGen: number;
  expiresAt: Date | null;
  maxDownloads: number | null;
  downloads: number;
  createdAt: Date;
}

/** What a live link's public request needs of its resource; never anything about the owner but the id. */
export interface LinkedResource {
  id: string;
  type: ResourceType;
  name: string;
  sizeBytes: number;
}

/** A change of a link's settings; an absent member is left as it is. */
export interface LinkChange {
  passwordHash?: string | null;
  expiresAt?: Date | null;
  maxDownloads?: number | null;
}

/** A child of a folder as the public listing shows it. */
export interface PublicChild {
  id: string;
  type: ResourceType;
  name: string;
  sizeBytes: number;
  mimeType: string | null;
  updatedAt: Date;
}

/** A file of a subtree as an archive takes it. */
export interface ArchiveFile {
  id: string;
  name: string;
  sizeBytes: number;
  storageKey: string;
  updatedAt: Date;
  /** The content's CRC-32 when it was recorded as it was written (content_crc32); null: to compute. */
  crc32: number | null;
}

interface LinkRow {
  id: string;
  user_id: string;
  device_id: string;
  resource_id: string;
  resource_type: ResourceType;
  token: string;
  access: LinkAccess;
  password_hash: string | null;
  password_gen: number;
  expires_at: Date | null;
  max_downloads: number | null;
  downloads: number;
  created_at: Date;
}

const toRecord = (row: LinkRow): LinkRecord => ({
  id: row.id,
  userId: row.user_id,
  deviceId: row.device_id,
  resourceId: row.resource_id,
  resourceType: row.resource_type,
  token: row.token,
  access: row.access,
  passwordHash: row.password_hash,
  passwordGen: Number(row.password_gen),
  expiresAt: row.expires_at,
  maxDownloads: row.max_downloads === null ? null : Number(row.max_downloads),
  downloads: Number(row.downloads),
  createdAt: row.created_at,
});

const LINK_COLUMNS = `l.id, l.user_id, l.device_id, l.resource_id, r.type AS resource_type, l.token, l.access, l.password_hash,
  l.password_gen, l.expires_at, l.max_downloads, l.downloads, l.created_at`;

/**
 * A link that answers: its resource active, its device and owner not deleted, not expired, not used
 * up. Every public request reads it through this one statement, so every way a link can die is the
 * same absence, on every gateway at once.
 */
const LIVE_BY_TOKEN = `SELECT ${LINK_COLUMNS}, r.name AS resource_name, r.size_bytes AS resource_size
  FROM links l
  JOIN resources r ON r.id = l.resource_id AND r.user_id = l.user_id AND r.alive = 1
  JOIN devices d ON d.id = l.device_id AND d.deleted_at IS NULL
  JOIN users u ON u.id = l.user_id AND u.deleted_at IS NULL
  WHERE l.token = ? AND (l.expires_at IS NULL OR l.expires_at > ?)
    AND (l.max_downloads IS NULL OR l.downloads < l.max_downloads)
  LIMIT 1`;

/** The only SQL about share links; the owner's reads and writes are scoped to the owner. */
export class LinkRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  /** Creates the link's own device and the link in one transaction. */
  async insert(link: LinkRecord, deviceName: string, platform: string): Promise<void> {
    const write = async (trx: Knex.Transaction) => {
      const device = { id: link.deviceId, name: deviceName, platform, userId: link.userId, kind: 'link' as const, createdAt: link.createdAt };
      await new DeviceRepository(trx).insert(device, trx);
      await trx('links').insert({
        id: link.id,
        user_id: link.userId,
        device_id: link.deviceId,
        resource_id: link.resourceId,
        token: link.token,
        access: link.access,
        password_hash: link.passwordHash,
        password_gen: link.passwordGen,
        expires_at: link.expiresAt,
        max_downloads: link.maxDownloads,
        downloads: 0,
        created_at: link.createdAt,
      });
    };
    await ('commit' in this.db ? write(this.db as Knex.Transaction) : (this.db as Knex).transaction(write));
  }

  async find(userId: string, id: string): Promise<LinkRecord | undefined> {
    const [rows] = (await this.db.raw(
      `SELECT ${LINK_COLUMNS} FROM links l JOIN resources r ON r.id = l.resource_id WHERE l.id = ? AND l.user_id = ? LIMIT 1`,
      [id, userId],
    )) as [LinkRow[]];
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  /** The owner's links, newest first, optionally of one resource. */
  async list(userId: string, resourceId: string | null, limit: number, offset: number): Promise<PageResult<LinkRecord>> {
    const where = resourceId === null ? 'l.user_id = ?' : 'l.user_id = ? AND l.resource_id = ?';
    const bindings = resourceId === null ? [userId] : [userId, resourceId];
    const [rows] = (await this.db.raw(
      `SELECT ${LINK_COLUMNS} FROM links l JOIN resources r ON r.id = l.resource_id WHERE ${where}
        ORDER BY l.created_at DESC, l.id DESC LIMIT ? OFFSET ?`,
      [...bindings, limit, offset],
    )) as [LinkRow[]];
    const [count] = (await this.db.raw(`SELECT COUNT(*) AS n FROM links l WHERE ${where}`, bindings)) as [{ n: number | string }[]];
    return { items: rows.map(toRecord), total: Number(count[0]?.n ?? 0) };
  }

  /** Applies a change of settings; a new password hash (or its removal) moves the password generation on. */
  async update(userId: string, id: string, change: LinkChange): Promise<boolean> {
    const columns: Record<string, unknown> = {};
    if (change.passwordHash !== undefined) {
      columns.password_hash = change.passwordHash;
      columns.password_gen = this.db.raw('password_gen + 1');
    }
    if (change.expiresAt !== undefined) columns.expires_at = change.expiresAt;
    if (change.maxDownloads !== undefined) columns.max_downloads = change.maxDownloads;
    if (Object.keys(columns).length === 0) return (await this.find(userId, id)) !== undefined;
    return (await this.db('links').where({ id, user_id: userId }).update(columns)) > 0;
  }

  /** Removes the link and retires its device; false when it is not the owner's. */
  async delete(userId: string, id: string, now: Date): Promise<boolean> {
    const remove = async (trx: Knex.Transaction) => {
      const row = await trx('links').where({ id, user_id: userId }).forUpdate().first<{ device_id: string } | undefined>('device_id');
      if (!row) return false;
      await trx('links').where({ id }).del();
      await trx('devices').where({ id: row.device_id }).whereNull('deleted_at').update({ deleted_at: now });
      return true;
    };
    return 'commit' in this.db ? remove(this.db as Knex.Transaction) : (this.db as Knex).transaction(remove);
  }

  /** Removes the links of resources being purged, and retires their devices (in the purge's transaction). */
  async removeOfResources(resourceIds: string[], now: Date): Promise<void> {
    if (resourceIds.length === 0) return;
    const devices = await this.db('links').whereIn('resource_id', resourceIds).pluck<string[]>('device_id');
    if (devices.length === 0) return;
    await this.db('links').whereIn('resource_id', resourceIds).del();
    await this.db('devices').whereIn('id', devices).whereNull('deleted_at').update({ deleted_at: now });
  }

  /** The live link of a token with its resource, or undefined for every way a link can be dead. */
  async findLive(token: string, now: Date): Promise<{ link: LinkRecord; resource: LinkedResource } | undefined> {
    const [rows] = (await this.db.raw(LIVE_BY_TOKEN, [token, now])) as [(LinkRow & { resource_name: string; resource_size: number | string })[]];
    const row = rows[0];
    if (!row) return undefined;
    const link = toRecord(row);
    return { link, resource: { id: row.resource_id, type: row.resource_type, name: row.resource_name, sizeBytes: Number(row.resource_size) } };
  }

  /**
   * Counts one download unless the link is used up or expired: one conditional UPDATE, so two
   * downloads racing for the last one cannot both get it. False when none was left.
   */
  async countDownload(id: string, now: Date): Promise<boolean> {
    const changed = await this.db('links')
      .where({ id })
      .andWhere((q) => q.whereNull('max_downloads').orWhereRaw('downloads < max_downloads'))
      .andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', now))
      .update({ downloads: this.db.raw('downloads + 1') });
    return changed > 0;
  }

  /** Folders first, then files, each by name then id: one page of a folder's active children, and their number. */
  async children(userId: string, folderId: string, limit: number, offset: number): Promise<PageResult<PublicChild>> {
    const [rows] = (await this.db.raw(
      `SELECT id, type, name, size_bytes, mime_type, updated_at FROM resources
        WHERE user_id = ? AND parent_key = ? AND alive = 1
        ORDER BY type = 'file', name_key, id LIMIT ? OFFSET ?`,
      [userId, folderId, limit, offset],
    )) as [{ id: string; type: ResourceType; name: string; size_bytes: number | string; mime_type: string | null; updated_at: Date }[]];
    const [count] = (await this.db.raw('SELECT COUNT(*) AS n FROM resources WHERE user_id = ? AND parent_key = ? AND alive = 1', [userId, folderId])) as [
      { n: number | string }[],
    ];
    const items = rows.map((r) => ({ id: r.id, type: r.type, name: r.name, sizeBytes: Number(r.size_bytes), mimeType: r.mime_type, updatedAt: r.updated_at }));
    return { items, total: Number(count[0]?.n ?? 0) };
  }

  /** Up to `limit` active files with content in a folder after (name, id), by name then id: an archive's next page. */
  async filesAfter(userId: string, folderId: string, after: { name: Buffer; id: string } | null, limit: number): Promise<(ArchiveFile & { nameKey: Buffer })[]> {
    // FORCE INDEX: when one folder holds most of the table's rows the optimizer scans and sorts them
    // all for every page; the index walks them in order and stops at the page's end.
    const [rows] = (await this.db.raw(
      `SELECT r.id, r.name, r.name_key, r.size_bytes, r.storage_key, r.updated_at, c.crc32 FROM resources r FORCE INDEX (ix_resources_children_name)
        LEFT JOIN content_crc32 c ON c.content_sha256 = r.content_sha256
        WHERE r.user_id = ? AND r.parent_key = ? AND r.type = 'file' AND r.alive = 1 AND r.storage_key IS NOT NULL
          ${after ? 'AND (r.name_key > ? OR (r.name_key = ? AND r.id > ?))' : ''}
        ORDER BY r.name_key, r.id LIMIT ?`,
      after ? [userId, folderId, after.name, after.name, after.id, limit] : [userId, folderId, limit],
    )) as [{ id: string; name: string; name_key: Buffer; size_bytes: number | string; storage_key: string; updated_at: Date; crc32: number | null }[]];
    return rows.map((r) => ({ id: r.id, name: r.name, nameKey: r.name_key, sizeBytes: Number(r.size_bytes), storageKey: r.storage_key, updatedAt: r.updated_at, crc32: r.crc32 }));
  }

  /** The active subfolders of a folder (id and name), by name. */
  async subfolders(userId: string, folderId: string): Promise<{ id: string; name: string }[]> {
    const [rows] = (await this.db.raw(
      `SELECT id, name FROM resources WHERE user_id = ? AND parent_key = ? AND type = 'folder' AND alive = 1 ORDER BY name_key, id`,
      [userId, folderId],
    )) as [{ id: string; name: string }[]];
    return rows;
  }

  /**
   * Which of `names` an active child of the folder holds (exact, as the sibling-name key compares).
   * A locking read: it sees what committed last, not the transaction's snapshot.
   */
  async takenNames(userId: string, folderId: string, names: string[]): Promise<Set<string>> {
    if (names.length === 0) return new Set();
    const [rows] = (await this.db.raw(
      `SELECT name FROM resources WHERE user_id = ? AND parent_key = ? AND alive = 1 AND name_key IN (${names.map(() => 'CAST(? AS BINARY)').join(', ')}) LOCK IN SHARE MODE`,
      [userId, folderId, ...names],
    )) as [{ name: string }[]];
    return new Set(rows.map((r) => r.name));
  }
}
