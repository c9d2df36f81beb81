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
import { ReservationRepository } from '../../../shared/db/reservation.repository';
import type { UsageRepository } from '../../../shared/db/usage.repository';
import type { DroppedVersion } from '../../../shared/db/version.repository';
import { cannotFit, QuotaGuard, quotaExceeded, silentQuotaObserver, type QuotaObserver } from '../../../shared/quota/quota.guard';
import { keepReplacedContent, type VersionPolicy } from '../../../shared/versions/version.history';
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
  /** The resumable upload these bytes come from: its reservation ends in the transaction that commits them. */
  uploadId?: string;
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
    private readonly versions: VersionPolicy,
    private readonly usage: UsageRepository,
    private readonly logger?: Logger,
    private readonly quota: QuotaObserver = silentQuotaObserver,
  ) {}

  /**
   * The checks that can be made before any byte is read (404, 412, and 507 when the declared size
   * already cannot fit), so a client is not made to send a large body for nothing. They are made
   * again, under the owner's lock, by replaceContent.
   */
  async checkBeforeUpload(userId: string, fileId: string, conditions: ContentConditions): Promise<ResourceRecord> {
    const file = isId(fileId) ? await this.resources.findActive(userId, fileId, 'file') : undefined;
    if (!file) throw notFound('no such file');
    checkContentConditions(file.contentSha256, conditions);
    return file;
  }

  /** 507 when new content of `declaredBytes` for `file` already cannot fit in the quota. */
  async checkDeclaredSize(file: ResourceRecord, declaredBytes: number): Promise<void> {
    const usage = await this.usage.read(file.userId);
    if (usage && cannotFit(usage, { adds: declaredBytes, frees: file.storageKey ? file.sizeBytes : 0 })) {
      this.quota.refused('declared_size');
      throw quotaExceeded(usage, declaredBytes);
    }
  }

  /**
   * Points the file at the staged bytes. Inside the owner's transaction: the file is read, the
   * preconditions and the quota checked, the row updated (rev + 1, a new feed position, the byte
   * counters) and the bytes renamed to a new storage key; the old content becomes a version, and
   * versions beyond the cap or the quota are dropped, their bytes removed after the commit. If anything
   * fails before the commit, the new bytes are removed and the rows, counters and old bytes are as they
   * were. A crash between the rename and the commit leaves the new file unreferenced, and one after the
   * commit leaves dropped versions' bytes: files that no row names, which the orphan check finds.
   */
  async replaceContent(input: ReplaceContentInput): Promise<ResourceRecord> {
    const { staged, userId, deviceId, fileId } = input;
    let placed: string | undefined;
    let dropped: DroppedVersion[] = [];
    // Set only once the commit is done: before that they may be the bytes being served.
    let committedDrops: DroppedVersion[] = [];
    try {
      if (!isId(fileId)) throw notFound('no such file');
      if (input.expectedSha256 !== undefined && input.expectedSha256 !== staged.sha256) {
        throw invalid('the content does not match the digest declared for it');
      }
      const now = new Date();
      const record = await this.owners.run(userId, async (trx, clock) => {
        const repo = this.resources.withTransaction(trx);
        const file = await repo.findActive(userId, fileId, 'file');
        if (!file) throw notFound('no such file');
        checkContentConditions(file.contentSha256, input);
        const reserved = input.uploadId ? await new ReservationRepository(trx).release(userId, input.uploadId) : 0;
        const quota = new QuotaGuard(trx, this.quota);
        await quota.admit(userId, { adds: staged.size - reserved, frees: file.storageKey ? file.sizeBytes : 0 });
        const extension = extensionOf(file.name);
        const content: ContentChange = {
          storageKey: newStorageKey(deviceId, file, extension),
          deviceId,
          sizeBytes: staged.size,
          contentSha256: staged.sha256,
          mimeType: contentMimeType(input.declaredType, file),
          extension,
        };
        const seq = clock.next();
        if (!(await repo.replaceContent(userId, fileId, content, file, now, seq))) throw notFound('no such file');
        const target = path.join(this.uploadDir, content.storageKey);
        await fs.mkdir(path.dirname(target), { recursive: true });
        await fs.rename(staged.path, target);
        placed = target;
        // The replaced content stays where it is, as the newest version; room is made after it.
        dropped = await keepReplacedContent(trx, this.versions, file, now);
        dropped.push(...(await quota.makeRoom(userId)));
        return {
          ...file,
          storageKey: content.storageKey,
          sizeBytes: content.sizeBytes,
          contentSha256: content.contentSha256,
          mimeType: content.mimeType,
          extension,
          updatedAt: now,
          rev: file.rev + 1,
          changeSeq: seq,
          contentAt: now,
          contentDeviceId: deviceId,
        };
      });
      placed = undefined;
      committedDrops = dropped;
      return record;
    } finally {
      await fs.rm(staged.path, { force: true });
      if (placed) await fs.rm(placed, { force: true });
      for (const v of committedDrops) await this.removeReplaced(v.storageKey);
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
