import { NO_DEVICE, type OwnerTransactions } from '../../../shared/db/owner.transaction';
import type { ResourceRepository } from '../../../shared/db/repositories/resource.repository';
import type { PageResult, ResourceRecord } from '../../../shared/db/repositories/resource.record';
import type { VersionRecord, VersionRepository } from '../../../shared/db/repositories/version.repository';
import { notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import type { ContentHandle, ContentStore } from '../../../shared/storage/content.store';
import { ContentNotFoundError } from '../../../shared/storage/content.store';
import type { ContentService } from '../content/content.service';
import type { ContentConditions } from '../content/preconditions';

export type { ResourceRecord, VersionRecord };

const noSuchVersion = () => notFound('no such version of this file');

/**
 * Version history of a file: list, read, restore, delete. A restore is a content replacement like
 * PUT (ContentService.replaceContent: the quota, rev, the feed with the caller's device, the replaced
 * content kept as a version), fed with a copy of the version's bytes staged through the content store,
 * so the version stays listed. Every use case 404s a file that is not the caller's active file, and a
 * version that is not one of that file's.
 */
export class VersionsService {
  constructor(
    private readonly owners: OwnerTransactions,
    private readonly resources: ResourceRepository,
    private readonly versions: VersionRepository,
    private readonly content: ContentService,
    private readonly store: ContentStore,
  ) {}

  async list(userId: string, fileId: string, limit: number, offset: number): Promise<PageResult<VersionRecord>> {
    await this.requireFile(userId, fileId);
    return this.versions.list(userId, fileId, limit, offset);
  }

  /** The file and the version, for the headers of a read (304 is decided before anything is opened). */
  async find(userId: string, fileId: string, versionId: string): Promise<{ file: ResourceRecord; version: VersionRecord }> {
    const file = await this.requireFile(userId, fileId);
    const version = isId(versionId) ? await this.versions.find(userId, fileId, versionId) : undefined;
    if (!version) throw noSuchVersion();
    return { file, version };
  }

  /** Opens a version's bytes; NOT_FOUND when they are gone (deleted or expired meanwhile). */
  async open(version: VersionRecord): Promise<ContentHandle> {
    try {
      return await this.store.open(version.storageKey);
    } catch (err) {
      if (err instanceof ContentNotFoundError) throw noSuchVersion();
      throw err;
    }
  }

  /** Makes the version's bytes the file's content again; the File after it. */
  async restore(userId: string, deviceId: string, fileId: string, versionId: string, conditions: ContentConditions): Promise<ResourceRecord> {
    const { version } = await this.find(userId, fileId, versionId);
    // Refused before any byte is copied: the failed precondition, a size that cannot fit.
    const file = await this.content.checkBeforeUpload(userId, fileId, conditions);
    await this.content.checkDeclaredSize(file, version.sizeBytes);
    const handle = await this.open(version);
    const staged = await this.store.stage(await handle.read(), { maxBytes: Number.POSITIVE_INFINITY });
    return this.content.replaceContent({
      userId,
      deviceId,
      fileId,
      staged,
      declaredType: version.mimeType ?? undefined,
      expectedSha256: version.contentSha256,
      ...conditions,
    });
  }

  /** Deletes a version; its bytes leave the store once the deletion commits. */
  async delete(userId: string, fileId: string, versionId: string): Promise<void> {
    if (!isId(fileId) || !isId(versionId)) throw noSuchVersion();
    const dropped = await this.owners.run({ userId, deviceId: NO_DEVICE }, async (trx) => {
      const file = await this.resources.withTransaction(trx).findActive(userId, fileId, 'file');
      if (!file) throw notFound('no such file');
      const repo = this.versions.withTransaction(trx);
      if (!(await repo.find(userId, fileId, versionId))) throw noSuchVersion();
      return repo.remove(userId, [versionId]);
    });
    // Committed: bytes a failed removal leaves are content no row names, which fsck reports.
    for (const v of dropped) await this.store.remove(v.storageKey).catch(() => undefined);
  }

  private async requireFile(userId: string, fileId: string): Promise<ResourceRecord> {
    const file = isId(fileId) ? await this.resources.findActive(userId, fileId, 'file') : undefined;
    if (!file) throw notFound('no such file');
    return file;
  }
}
