import { promises as fs } from 'node:fs';
import path from 'node:path';
import { newId } from '../../shared/ids';
import type { Api } from './client';
import type { TestEnv } from './harness';

/** Helpers of the trash, purge and fsck tests: build trees through the API, read the feed and the disk. */
let nextOpId = 1;

/** Applies sync ops and expects every one of them applied. */
export async function syncOps(api: Api, ops: unknown[]): Promise<void> {
  const res = await api.post('/v1/sync/ops', { ops });
  if (res.status !== 200 || res.body.failed !== null) throw new Error(`sync ops failed: ${res.status} ${res.text}`);
}

export async function createFolder(api: Api, name: string, parentId: string | null = null): Promise<string> {
  const id = newId();
  await syncOps(api, [{ opId: nextOpId++, type: 'create', resourceId: id, payload: { resourceType: 'folder', name, parentId } }]);
  return id;
}

/** Deletes through a sync op: a folder takes its whole subtree, with one deleted_at. */
export const deleteBySync = (api: Api, id: string) => syncOps(api, [{ opId: nextOpId++, type: 'delete', resourceId: id }]);

/** Uploads a file with content; returns its File representation. */
export async function uploadFile(api: Api, name: string, content: string, folderId: string | null = null): Promise<{ id: string; rev: number; [k: string]: unknown }> {
  const res = await api.upload(folderId ? { folderId } : {}, { name, content, type: 'text/plain' });
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.text}`);
  return res.body;
}

export async function deleteFile(api: Api, id: string): Promise<void> {
  const res = await api.delete(`/v1/files/${id}`);
  if (res.status !== 200) throw new Error(`file delete failed: ${res.status} ${res.text}`);
}

/** The feed cursor after everything committed so far. */
export async function feedCursorNow(api: Api): Promise<string> {
  let cursor: string | undefined;
  for (;;) {
    const res = await api.get(`/v1/sync/changes?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (res.status !== 200) throw new Error(`feed failed: ${res.status} ${res.text}`);
    cursor = res.body.cursor as string;
    if (!res.body.hasMore) return cursor;
  }
}

export interface ChangeItem {
  id: string;
  deleted: boolean;
  rev: number;
  [k: string]: unknown;
}

/** Every change after `cursor`, by resource id. */
export async function changesSince(api: Api, cursor: string): Promise<Map<string, ChangeItem>> {
  const res = await api.get(`/v1/sync/changes?limit=1000&cursor=${encodeURIComponent(cursor)}`);
  if (res.status !== 200) throw new Error(`feed failed: ${res.status} ${res.text}`);
  return new Map((res.body.items as ChangeItem[]).map((i) => [i.id, i]));
}

export interface ResourceState {
  id: string;
  parent_id: string | null;
  deleted_at: Date | null;
  purged_at: Date | null;
  storage_key: string | null;
  rev: number;
  change_seq: string | number;
}

export const resourceRow = (env: TestEnv, id: string): Promise<ResourceState> =>
  env.db('resources').where({ id }).first('id', 'parent_id', 'deleted_at', 'purged_at', 'storage_key', 'rev', 'change_seq');

export const onDisk = (env: TestEnv, storageKey: string) =>
  fs.stat(path.join(env.uploadDir, storageKey)).then(
    () => true,
    () => false,
  );
