import { NO_DEVICE, type OwnerTransactions } from '../db/owner.transaction';
import { VersionRepository, type DroppedVersion } from '../db/repositories/version.repository';
import type { Logger } from '../logger';
import type { ContentStore } from '../storage/content.store';

export interface VersionExpiryRun {
  versionsExpired: number;
  filesRemoved: number;
}

/**
 * The scheduled end of versions: those replaced more than VERSION_RETENTION_DAYS ago, and those of a
 * file beyond MAX_VERSIONS (a cap lowered since they were kept). Each owner's versions go in one owner
 * transaction (their bytes leave the counters with the rows), then their content leaves the store.
 * Safe to run twice at once: each transaction removes only the rows still there.
 */
export class VersionExpiry {
  constructor(
    private readonly owners: OwnerTransactions,
    private readonly versions: VersionRepository,
    private readonly store: ContentStore,
    private readonly logger?: Logger,
  ) {}

  async run(cutoff: Date, maxVersions: number, chunk = 500, maxChunks = 100): Promise<VersionExpiryRun> {
    const run: VersionExpiryRun = { versionsExpired: 0, filesRemoved: 0 };
    for (let round = 0; round < maxChunks; round++) {
      const due = await this.versions.expired(cutoff, chunk);
      if (due.length === 0) break;
      const byOwner = new Map<string, string[]>();
      for (const v of due) byOwner.set(v.userId, [...(byOwner.get(v.userId) ?? []), v.id]);
      let progressed = false;
      for (const [userId, ids] of byOwner) {
        const dropped = await this.owners.run({ userId, deviceId: NO_DEVICE }, (trx) => this.versions.withTransaction(trx).remove(userId, ids));
        if (dropped.length > 0) progressed = true;
        await this.discard(dropped, run);
      }
      if (!progressed) break;
    }
    for (const { userId, fileId } of await this.versions.overCap(maxVersions, chunk)) {
      const dropped = await this.owners.run({ userId, deviceId: NO_DEVICE }, async (trx) => {
        const repo = this.versions.withTransaction(trx);
        return repo.remove(userId, await repo.beyond(userId, fileId, maxVersions));
      });
      await this.discard(dropped, run);
    }
    return run;
  }

  private async discard(dropped: DroppedVersion[], run: VersionExpiryRun): Promise<void> {
    run.versionsExpired += dropped.length;
    let failed = 0;
    for (const v of dropped) {
      try {
        await this.store.remove(v.storageKey);
        run.filesRemoved++;
      } catch {
        failed++;
      }
    }
    if (failed > 0) this.logger?.warn({ files: failed }, 'expired versions could not be removed from the store; fsck --repair will');
  }
}
