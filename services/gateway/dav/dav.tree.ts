import { randomBytes } from 'node:crypto';
import type { Request } from 'express';
import type { Principal } from '../auth/principal.service';
import { AppError, type ErrorCode } from '../../../shared/errors';
import { newId } from '../../../shared/ids';
import type { ContentService } from '../content/content.service';
import type { ContentConditions } from '../content/preconditions';
import type { FilesService } from '../files/files.service';
import type { UploadStaging } from '../uploads/upload.staging';
import type { BatchSubmitter } from '../sync/batch.submitter';
import type { DavPath } from './dav.paths';
import type { DavService, ResourceRecord } from './dav.service';

/** A resource of the tree, or its root (a collection that is no resource of the API). */
export type DavNode = { kind: 'root' } | { kind: 'resource'; record: ResourceRecord };

export const isCollection = (n: DavNode): boolean => n.kind === 'root' || n.record.type === 'folder';
/** The folder id a node stands for as a parent: null for the root. */
export const folderIdOf = (n: DavNode): string | null => (n.kind === 'root' ? null : n.record.id);

export interface Resolved {
  path: DavPath;
  /** The resource at the path; undefined when nothing is there. */
  node?: DavNode;
  /** The collection the path's last segment lives in; undefined when it does not exist (409). */
  parent?: DavNode;
}

/** Who writes, and under which request id their sync batches are recorded. */
export interface Writer {
  principal: Principal;
  requestId: string;
}

/** A sync op as the API's `POST /sync/ops` takes it; the opId is added on submission. */
type SyncOp = { type: 'create' | 'update' | 'move' | 'delete'; resourceId: string; payload?: Record<string, unknown> };

/** A random positive 63-bit op id, so that no two ops of a device collide. */
const opId = (): string => (randomBytes(8).readBigUInt64BE() >> 1n).toString();

/**
 * The WebDAV tree over the API's services: names are found with one indexed lookup per segment, and
 * every change goes through the write path the API uses for it. Folders, moves, renames and deletes
 * are sync ops submitted as a batch of the writer's device (the inbox, the worker, the change feed
 * with that device); content goes through the upload and content-replacement services.
 */
export class DavTree {
  constructor(
    private readonly dav: DavService,
    private readonly files: FilesService,
    private readonly content: ContentService,
    private readonly storage: UploadStaging,
    private readonly sync: BatchSubmitter,
    readonly maxUploadBytes: number,
  ) {}

  async resolve(userId: string, path: DavPath): Promise<Resolved> {
    let current: DavNode = { kind: 'root' };
    const { segments } = path;
    for (let i = 0; i < segments.length; i++) {
      if (!isCollection(current)) return { path };
      const found = await this.dav.child(userId, folderIdOf(current), segments[i]!);
      if (!found) return i === segments.length - 1 ? { path, parent: current } : { path };
      if (i === segments.length - 1) return { path, node: { kind: 'resource', record: found }, parent: current };
      current = { kind: 'resource', record: found };
    }
    return { path, node: current };
  }

  /** A page of a folder's members, folders first, by name. */
  members(userId: string, folderId: string | null, after: ResourceRecord | null, limit: number): Promise<ResourceRecord[]> {
    return this.dav.members(userId, folderId, after, limit);
  }

  async createFolder(writer: Writer, parentId: string | null, name: string): Promise<string> {
    const id = newId();
    await this.submit(writer, [{ type: 'create', resourceId: id, payload: { resourceType: 'folder', name, parentId } }]);
    return id;
  }

  /** To the trash, a folder with its subtree, as the API's delete op does. */
  async remove(writer: Writer, id: string): Promise<void> {
    await this.submit(writer, [{ type: 'delete', resourceId: id }]);
  }

  /**
   * MOVE: the move and rename ops of the API in one batch, after the delete of the resource it
   * replaces (Overwrite: T). The ids stay, so the feed shows the same resource under its new path.
   */
  async move(writer: Writer, record: ResourceRecord, parentId: string | null, name: string, replacedId?: string): Promise<void> {
    const ops: SyncOp[] = [];
    if (replacedId) ops.push({ type: 'delete', resourceId: replacedId });
    if (record.parentId !== parentId) ops.push({ type: 'move', resourceId: record.id, payload: { parentId } });
    if (record.name !== name) ops.push({ type: 'update', resourceId: record.id, payload: { name } });
    if (ops.length > 0) await this.submit(writer, ops);
  }

  /**
   * Refuses, before a byte is read, a PUT whose declared length cannot fit the writer's quota (507),
   * as the API's upload and content replacement do; `replaced` is the file it would replace.
   */
  async checkDeclaredSize(userId: string, length: number, replaced?: ResourceRecord): Promise<void> {
    if (replaced) await this.content.checkDeclaredSize(replaced, length);
    else await this.files.checkDeclaredSize(userId, length);
  }

  /** PUT of a new file: the body is staged and uploaded as `POST /files` does. */
  async createFile(writer: Writer, parentId: string | null, name: string, body: Request, declaredType: string | undefined): Promise<ResourceRecord> {
    const staged = await this.storage.stage(body, this.maxUploadBytes);
    const { userId, deviceId } = writer.principal;
    return this.files.upload({ userId, deviceId, staged, declaredName: name, declaredType, fields: { folderId: parentId ?? '', name } });
  }

  /** PUT over a file: the content replacement of `PUT /files/:id/content` (preconditions, a version kept). */
  async replaceFile(writer: Writer, fileId: string, body: Request, declaredType: string | undefined, conditions: ContentConditions): Promise<ResourceRecord> {
    const { userId, deviceId } = writer.principal;
    await this.content.checkBeforeUpload(userId, fileId, conditions);
    const staged = await this.storage.stage(body, this.maxUploadBytes);
    return this.content.replaceContent({ userId, deviceId, fileId, staged, declaredType, ...conditions });
  }

  /** COPY of a file: a new file with the same bytes (and dead properties), or without content if it had none. */
  async copyFile(writer: Writer, source: ResourceRecord, parentId: string | null, name: string): Promise<string> {
    const { userId, deviceId } = writer.principal;
    let id: string;
    if (!source.storageKey) {
      id = newId();
      await this.submit(writer, [
        { type: 'create', resourceId: id, payload: { resourceType: 'file', name, parentId, size: source.sizeBytes, mimeType: source.mimeType ?? undefined } },
      ]);
    } else {
      const { file, content } = await this.files.openContent(userId, source);
      const staged = await this.storage.stage((await content.read()) as unknown as Request, Number.MAX_SAFE_INTEGER);
      const copy = await this.files.upload({
        userId,
        deviceId,
        staged,
        declaredName: name,
        declaredType: file.mimeType ?? undefined,
        fields: { folderId: parentId ?? '', name },
      });
      id = copy.id;
    }
    await this.dav.copyProperties(userId, source.id, id);
    return id;
  }

  /** A file's content, opened for reading (NOT_FOUND without content), with the file as of that content. */
  openContent(userId: string, file: ResourceRecord) {
    return this.files.openContent(userId, file);
  }

  private async submit(writer: Writer, ops: SyncOp[]): Promise<void> {
    const { userId, deviceId } = writer.principal;
    const result = await this.sync.submit({
      requestId: writer.requestId,
      userId,
      deviceId,
      opsJson: JSON.stringify(ops.map((op) => ({ opId: opId(), ...op }))),
      acceptedAt: Date.now(),
    });
    if (result.failed) throw new AppError(result.failed.error.code as ErrorCode, result.failed.error.message);
  }
}
