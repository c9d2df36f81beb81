import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import mime from 'mime-types';
import type { OwnerTransactions } from '../../../shared/db/owner.transaction';
import type { ContentChange, ResourceRecord, ResourceRepository } from '../../../shared/db/resource.repository';
import { invalid, notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import type { Logger } from '../../../shared/logger';
import { extensionOf } from '../../../shared/names';
import { MEDIA_TYPE } from '../files/files.service';
import type { StagedFile } from '../files/upload.storage';
import { checkContentConditions, type ContentConditions } from './preconditions';

export interface ReplaceContentInput extends ContentConditions {
  userId: string;
  /** The device writing; the new bytes go under its folder. */
  deviceId: string;
  fileId: string;
  /** Bytes already on disk under the staging folder; this call moves or removes them. */
  staged: StagedFile;
  /** The request's Content-Type, if any. */
  declaredType?: string;
  /** The SHA-256 (hex) the client declared for the bytes; a mismatch is a 400. */
  expectedSha256?: string;
}

/**
 * The type of new content: a declared specific type wins; otherwise the file keeps its type, or,
 * when it had none, gets the one its name's extension implies.
 */
export function contentMimeType(declared: string | undefined, file: Pick<ResourceRecord, 'name' | 'mimeType'>): string {
  const type = declared?.split(';')[0]?.trim().toLowerCase();
  if (type && type !== 'application/octet-stream' && MEDIA_TYPE.test(type)) return type;
  if (file.mimeType) return file.mimeType;
  return mime.lookup(file.name) || (type === 'application/octet-stream' ? type : '');
}

/**
 * A new storage key for a file's content. Never the current one: a reader may be streaming those
 * bytes, so new content never lands on them. Keys are ours alone, under the writing device's folder.
 */
function newStorageKey(deviceId: string, file: ResourceRecord, extension: string | null): string {
  for (;;) {
    const key = `${deviceId}/${file.id}.${randomBytes(4).toString('hex')}${extension ? `.${extension}` : ''}`;
    if (key !== file.storageKey) return key;
  }
}

/** Replaces the content of files: `PUT /files/:id/content`, and the completion of resumable uploads. */
export class ContentService {
  constructor(
    private readonly owners: OwnerTransactions,
    private readonly resources: ResourceRepository,
    private readonly uploadDir: string,
    private readonly logger?: Logger,
  ) {}

  /**
   * The checks that can be made before any byte is read (404, 412), so a client is not made to send
   * a large body for nothing. They are made again, under the owner's lock, by replaceContent.
   */
  async checkBeforeUpload(userId: string, fileId: string, conditions: ContentConditions): Promise<void> {
    const file = isId(fileId) ? await this.resources.findActive(userId, fileId, 'file') : undefined;
    if (!file) throw notFound('no such file');
    checkContentConditions(file, conditions);
  }

  /**
   * Points the file at the staged bytes. Inside the owner's transaction: the file is read, the
   * preconditions checked, the row updated (rev + 1, a new feed position) and the bytes renamed to a
   * new storage key; after the commit the old bytes are removed. If anything fails before the commit,
   * the new bytes are removed and the row and the old bytes are as they were. A crash between the
   * rename and the commit leaves the new file unreferenced, and one after the commit leaves the old
   * one: both are files under <deviceId>/ that no row's storage_key names, which the orphan check finds.
   */
  async replaceContent(input: ReplaceContentInput): Promise<ResourceRecord> {
    const { staged, userId, deviceId, fileId } = input;
    let placed: string | undefined;
    let replacedKey: string | null = null;
    // Set only once the commit is done: before that the old bytes are the ones being served.
    let previousKey: string | null = null;
    try {
      if (!isId(fileId)) throw notFound('no such file');
      if (input.expectedSha256 !== undefined && input.expectedSha256 !== staged.sha256) {
        throw invalid('the content does not match the digest declared for it');
      }
      const now = new Date();
      const record = await this.owners.run({ userId, deviceId }, async (trx, clock) => {
        const repo = this.resources.withTransaction(trx);
        const file = await repo.findActive(userId, fileId, 'file');
        if (!file) throw notFound('no such file');
        checkContentConditions(file, input);
        const extension = extensionOf(file.name);
        const content: ContentChange = {
          storageKey: newStorageKey(deviceId, file, extension),
          sizeBytes: staged.size,
          contentSha256: staged.sha256,
          mimeType: contentMimeType(input.declaredType, file),
          extension,
        };
        const stamp = clock.next();
        if (!(await repo.replaceContent(userId, fileId, content, now, stamp))) throw notFound('no such file');
        const target = path.join(this.uploadDir, content.storageKey);
        await fs.mkdir(path.dirname(target), { recursive: true });
        await fs.rename(staged.path, target);
        placed = target;
        replacedKey = file.storageKey;
        return {
          ...file,
          storageKey: content.storageKey,
          sizeBytes: content.sizeBytes,
          contentSha256: content.contentSha256,
          mimeType: content.mimeType,
          extension,
          updatedAt: now,
          rev: file.rev + 1,
          changeSeq: stamp.seq,
          changeDeviceId: stamp.deviceId,
        };
      });
      placed = undefined;
      previousKey = replacedKey;
      return record;
    } finally {
      await fs.rm(staged.path, { force: true });
      if (placed) await fs.rm(placed, { force: true });
      if (previousKey) await this.removeReplaced(previousKey);
    }
  }

  /** The content is committed either way; a file left here is an orphan the check reports. */
  private async removeReplaced(storageKey: string): Promise<void> {
    try {
      await fs.rm(path.join(this.uploadDir, storageKey), { force: true });
    } catch (err) {
      this.logger?.warn({ err, storageKey }, 'replaced content could not be removed');
    }
  }
}
