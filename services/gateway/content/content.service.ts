import mime from 'mime-types';
import { ReservationRepository } from '../../../shared/quota/reservation.repository';
import type { ResourceRepository } from '../../../shared/db/repositories/resource.repository';
import type { ContentChange, ResourceRecord } from '../../../shared/db/repositories/resource.record';
import type { UsageRepository } from '../../../shared/quota/usage.repository';
import { invalid, notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import { extensionOf } from '../../../shared/names';
import { cannotFit, QuotaGuard, quotaExceeded, silentQuotaObserver, type QuotaObserver } from '../../../shared/quota/quota.guard';
import { replacementKey } from '../../../shared/content/content.keys';
import type { StagedContent } from '../../../shared/storage/content.store';
import type { ContentWriter } from '../../../shared/content/content.writer';
import { keepReplacedContent, type VersionPolicy } from '../../../shared/versions/version.history';
import { MEDIA_TYPE } from '../files/files.service';
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
  /** The resumable upload these bytes come from: its reservation ends in the transaction that commits them. */
  uploadId?: string;
  /** The caller keeps the new content's chunk list itself (a delta upload). */
  listed?: boolean;
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
 * Replaces the content of files: `PUT /files/:id/content`, the completion of resumable uploads with
 * fileId, and version restores.
 */
export class ContentService {
  constructor(
    private readonly resources: ResourceRepository,
    private readonly writer: ContentWriter,
    private readonly versions: VersionPolicy,
    private readonly usage: UsageRepository,
    private readonly quota: QuotaObserver = silentQuotaObserver,
  ) {}

  /**
   * The checks that can be made before any byte is read (404, 412), so a client is not made to send
   * a large body for nothing. They are made again, under the owner's lock, by replaceContent.
   */
  async checkBeforeUpload(userId: string, fileId: string, conditions: ContentConditions): Promise<ResourceRecord> {
    const file = isId(fileId) ? await this.resources.findActive(userId, fileId, 'file') : undefined;
    if (!file) throw notFound('no such file');
    checkContentConditions(file, conditions);
    return file;
  }

  /** 507 before the body is read when new content of `declaredBytes` for `file` already cannot fit in the quota. */
  async checkDeclaredSize(file: ResourceRecord, declaredBytes: number): Promise<void> {
    const usage = await this.usage.read(file.userId);
    if (usage && cannotFit(usage, { adds: declaredBytes, frees: file.storageKey ? file.sizeBytes : 0 })) {
      this.quota.refused('declared_size');
      throw quotaExceeded(usage, declaredBytes);
    }
  }

  /**
   * Points the file at the staged bytes. Inside the owner's transaction (see ContentWriter): the file
   * is read, the preconditions and the quota checked, the row updated (rev + 1, a new feed position,
   * the byte counters) and the bytes placed under a new key. The content it replaces stays under its
   * key as the file's newest version; versions beyond MAX_VERSIONS or the quota are dropped, their
   * bytes removed after the commit. If anything fails before the commit, the new bytes are removed and
   * the rows, counters and old bytes are as they were.
   */
  async replaceContent(input: ReplaceContentInput): Promise<ResourceRecord> {
    const { staged, userId, deviceId, fileId } = input;
    return this.writer.commit({
      author: { userId, deviceId },
      staged,
      listed: input.listed,
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
        checkContentConditions(file, input);
        // A resumable upload's bytes were reserved at its creation: they are in the quota already.
        const reserved = input.uploadId ? await new ReservationRepository(trx).release(userId, input.uploadId) : 0;
        const quota = new QuotaGuard(trx, this.quota);
        await quota.admit(userId, { adds: staged.size - reserved, frees: file.storageKey ? file.sizeBytes : 0 });
        const extension = extensionOf(file.name);
        const content: ContentChange = {
          storageKey: replacementKey(deviceId, file.id, extension, file.storageKey),
          deviceId,
          sizeBytes: staged.size,
          contentSha256: staged.sha256,
          mimeType: contentMimeType(input.declaredType, file),
          extension,
        };
        const stamp = clock.next();
        if (!(await repo.replaceContent(userId, fileId, content, file, now, stamp))) throw notFound('no such file');
        // The replaced content stays under its key as the newest version; room is made after it.
        const dropped = await keepReplacedContent(trx, this.versions, file, now);
        dropped.push(...(await quota.makeRoom(userId)));
        const result: ResourceRecord = {
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
          contentAt: now,
          contentDeviceId: deviceId,
        };
        return { key: content.storageKey, droppedKeys: dropped.map((v) => v.storageKey), mimeType: content.mimeType, result };
      },
    });
  }
}
