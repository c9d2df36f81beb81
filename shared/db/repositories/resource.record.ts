import type { ChangeStamp } from '../owner.transaction';

/*
 * A resource (a file or a folder) as the code handles it, the row it is stored as, and the mapping
 * between them. ResourceRepository (resource.repository.ts) and the other repositories of the
 * resources table read and write these shapes.
 */

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
  /** The device whose request made the latest change; '' when none did (a scheduled purge). */
  changeDeviceId: string;
  /** When the current content was written, and by which device (kept with it when it becomes a version). */
  contentAt?: Date | null;
  contentDeviceId?: string | null;
}

/** A resource to insert; its first change is stamped by the transaction's clock. */
export type NewResource = Omit<ResourceRecord, 'updatedAt' | 'deletedAt' | 'rev' | 'changeSeq' | 'changeDeviceId'> & { change: ChangeStamp };

/** New content of a file, already in place on disk under `storageKey`. */
export interface ContentChange {
  storageKey: string;
  /** The device writing it. */
  deviceId: string;
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
  rev: number;
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
  change_device_id: string;
  content_at?: Date | null;
  content_device_id?: string | null;
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
  'content_at',
  'content_device_id',
  'change_device_id',
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
  changeDeviceId: row.change_device_id,
  contentAt: row.content_at ?? null,
  contentDeviceId: row.content_device_id ?? null,
});
