import type { Knex } from 'knex';
import { newId } from '../ids';
import type { ResourceRecord } from '../db/repositories/resource.record';
import { VersionRepository, type DroppedVersion } from '../db/repositories/version.repository';

/** How versions are kept: MAX_VERSIONS and VERSION_RETENTION_DAYS. */
export interface VersionPolicy {
  /** Versions kept per file; 0 keeps none. */
  maxVersions: number;
  /** How long a version is kept after it was replaced. */
  retentionMs: number;
}

/**
 * What every replacement of content does with the content it replaces (PUT, a resumable upload with
 * fileId, a version restore): inside the owner's transaction, after the file points at its new
 * content, the old content becomes the file's newest version under the storage key it already has
 * (one copy, no bytes moved), and the file's versions beyond MAX_VERSIONS are dropped, oldest first.
 * Returns what was dropped, whose bytes the caller removes once the transaction commits.
 */
export async function keepReplacedContent(
  trx: Knex.Transaction,
  policy: VersionPolicy,
  file: ResourceRecord,
  replacedAt: Date,
): Promise<DroppedVersion[]> {
  if (!file.storageKey || !file.contentSha256) return [];
  const versions = new VersionRepository(trx);
  await versions.keep({
    id: newId(),
    userId: file.userId,
    fileId: file.id,
    storageKey: file.storageKey,
    sizeBytes: file.sizeBytes,
    contentSha256: file.contentSha256,
    mimeType: file.mimeType,
    deviceId: file.contentDeviceId ?? '',
    createdAt: file.contentAt ?? file.updatedAt,
    replacedAt,
  });
  return versions.remove(file.userId, await versions.beyond(file.userId, file.id, policy.maxVersions));
}
