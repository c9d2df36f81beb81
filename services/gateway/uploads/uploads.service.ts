import type { Upload } from '@tus/server';
import type { ResourceRecord } from '../../../shared/db/repositories/resource.record';
import type { Principal } from '../auth/principal.service';
import { invalid, notFound } from '../../../shared/errors';
import type { UploadReservations } from '../../../shared/quota/upload.reservations';
import type { ResumableDataStore } from '../../../shared/storage/content.store';
import type { ContentService } from '../content/content.service';
import type { FilesService, UploadInput } from '../files/files.service';
import type { OpenUploads } from './open.uploads';
import { clientMetadata, ownerOf, parseUploadRequest, preconditionsOf, storedMetadata, type Preconditions, type UploadOwner } from './upload.metadata';

/** File creation as POST /files does it, with its early check of the folder. */
export type FileTarget = Pick<FilesService, 'upload' | 'requireFolder'>;

/** Content replacement as PUT /files/:id/content does it, with its early checks. */
export type ContentTarget = Pick<ContentService, 'replaceContent' | 'checkBeforeUpload'>;

/**
 * The use cases behind /v1/uploads that are ours rather than the tus protocol's: who may create and
 * touch an upload, and what happens to its bytes when the last one arrives.
 */
export class UploadsService {
  constructor(
    private readonly store: ResumableDataStore,
    private readonly files: FileTarget,
    private readonly content: ContentTarget,
    private readonly open: Pick<OpenUploads, 'admit' | 'release'>,
    private readonly reservations: UploadReservations,
  ) {}

  /**
   * Checks a new upload's metadata before any byte is sent, and returns the metadata to store:
   * the client's keys plus the owner. What cannot change during the upload (the target folder or
   * file existing) is checked now too, so a client does not send gigabytes to learn of a 404; it is
   * checked again at completion. Last, the upload takes one of the owner's MAX_OPEN_UPLOADS places
   * (429 when none is free), so a refused request holds none.
   */
  async admit(principal: Principal, upload: Upload, conditions: Preconditions): Promise<Record<string, string | null>> {
    if (upload.sizeIsDeferred) throw invalid('Upload-Length is required');
    const metadata = clientMetadata(upload.metadata);
    const request = parseUploadRequest(metadata);
    if (request.fileId !== undefined) {
      await this.content.checkBeforeUpload(principal.userId, request.fileId, conditions);
    } else if (request.folderId !== null) {
      await this.files.requireFolder(principal.userId, request.folderId);
    }
    await this.open.admit(principal.userId, upload.id);
    // Last: the Upload-Length is held in the quota from now until the upload ends (507 when it does
    // not fit, and then the upload holds no open place either).
    try {
      await this.reservations.reserve(principal.userId, upload.id, upload.size ?? 0);
    } catch (err) {
      await this.open.release(principal.userId, upload.id).catch(() => undefined);
      throw err;
    }
    return storedMetadata(metadata, principal, conditions);
  }

  /** The upload's owner when it is the caller's; NOT_FOUND for anything else, which hides whether it exists. */
  async requireOwn(userId: string, id: string): Promise<Pick<Upload, 'metadata' | 'creation_date'>> {
    // The info file alone says who owns it; the handler reads the upload itself under its lock.
    const upload = await this.store.info(id);
    const owner = upload && ownerOf(upload.metadata);
    if (!upload || owner?.userId !== userId) throw notFound('no such upload');
    return upload;
  }

  /**
   * The last byte arrived: creates the file (or replaces the content) from the upload's bytes with
   * the rules and errors of POST /files (PUT /files/:id/content with fileId). Whatever happens, the
   * upload is gone afterwards: its bytes were placed as the file's content, or removed, and its
   * reservation ended (in the transaction that commits the file, or by the store's removal).
   */
  async complete(upload: Upload): Promise<ResourceRecord> {
    const owner = ownerOf(upload.metadata) as UploadOwner;
    try {
      const request = parseUploadRequest(upload.metadata);
      const size = upload.size ?? upload.offset;
      const staged = await this.store.staged(upload.id, size);
      if (request.fileId !== undefined) {
        return await this.content.replaceContent({
          userId: owner.userId,
          deviceId: owner.deviceId,
          fileId: request.fileId,
          staged,
          declaredType: request.declaredType,
          ...preconditionsOf(upload.metadata),
          expectedSha256: request.sha256,
          uploadId: upload.id,
        });
      }
      const fields: UploadInput['fields'] = { name: request.name };
      if (request.id !== undefined) fields.id = request.id;
      if (request.folderId !== null) fields.folderId = request.folderId;
      return await this.files.upload({
        userId: owner.userId,
        deviceId: owner.deviceId,
        staged,
        declaredName: request.name,
        declaredType: request.declaredType,
        fields,
        expectedSha256: request.sha256,
        uploadId: upload.id,
      });
    } finally {
      await this.store.remove(upload.id);
    }
  }
}
