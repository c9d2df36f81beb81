import mime from 'mime-types';
import type { ContentChange, ResourceRecord, ResourceRepository } from '../../../shared/db/resource.repository';
import { invalid, notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import { extensionOf } from '../../../shared/names';
import { MEDIA_TYPE } from '../files/files.service';
import { replacementKey } from '../../../shared/storage/content.keys';
import type { StagedContent } from '../../../shared/storage/content.store';
import type { ContentWriter } from '../../../shared/storage/content.writer';
import { checkContentConditions, type ContentConditions } from './preconditions';

export interface ReplaceContentInput extends ContentConditions {
  userId: string;
  /** The device writing; the new bytes go under its folder. */
  deviceId: string;
  fileId: string;
  /** Bytes already staged in the content store; this call places or discards them. */
  staged: StagedContent;
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

/** Replaces the content of files: `PUT /files/:id/content`, and the completion of resumable uploads. */
export class ContentService {
  constructor(
    private readonly resources: ResourceRepository,
    private readonly writer: ContentWriter,
  ) {}

  /**
   * The checks that can be made before any byte is read (404, 412), so a client is not made to send
   * a large body for nothing. They are made again, under the owner's lock, by replaceContent.
   */
  async checkBeforeUpload(userId: string, fileId: string, conditions: ContentConditions): Promise<void> {
    const file = isId(fileId) ? await this.resources.findActive(userId, fileId, 'file') : undefined;
    if (!file) throw notFound('no such file');
    checkContentConditions(file.contentSha256, conditions);
  }

  /**
   * Points the file at the staged bytes. Inside the owner's transaction (see ContentWriter): the file
   * is read, the preconditions checked, the row updated (rev + 1, a new feed position) and the bytes
   * placed under a new key; after the commit the old key is removed. If anything fails before the
   * commit, the new bytes are removed and the row and the old bytes are as they were.
   */
  async replaceContent(input: ReplaceContentInput): Promise<ResourceRecord> {
    const { staged, userId, deviceId, fileId } = input;
    return this.writer.commit({
      userId,
      staged,
      check: () => {
        if (!isId(fileId)) throw notFound('no such file');
        if (input.expectedSha256 !== undefined && input.expectedSha256 !== staged.sha256) {
          throw invalid('the content does not match the digest declared for it');
        }
      },
      decide: async (trx, clock) => {
        const now = new Date();
        const repo = this.resources.withTransaction(trx);
        const file = await repo.findActive(userId, fileId, 'file');
        if (!file) throw notFound('no such file');
        checkContentConditions(file.contentSha256, input);
        const extension = extensionOf(file.name);
        const content: ContentChange = {
          storageKey: replacementKey(deviceId, file.id, extension, file.storageKey),
          sizeBytes: staged.size,
          contentSha256: staged.sha256,
          mimeType: contentMimeType(input.declaredType, file),
          extension,
        };
        const seq = clock.next();
        if (!(await repo.replaceContent(userId, fileId, content, now, seq))) throw notFound('no such file');
        const result: ResourceRecord = {
          ...file,
          storageKey: content.storageKey,
          sizeBytes: content.sizeBytes,
          contentSha256: content.contentSha256,
          mimeType: content.mimeType,
          extension,
          updatedAt: now,
          rev: file.rev + 1,
          changeSeq: seq,
        };
        return { key: content.storageKey, replacedKey: file.storageKey, result };
      },
    });
  }
}
