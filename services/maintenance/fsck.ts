import type { ContentHolder, ContentRepository } from '../../shared/db/content.repository';
import type { OwnerTransactions } from '../../shared/db/owner.transaction';
import { isStagingKey, type ContentStore } from '../../shared/storage/content.store';

export interface FsckOptions {
  repair: boolean;
  /** Content files younger than this are left out: their row may be committing right now. */
  orphanMinAgeMs: number;
  /** Staged files younger than this are uploads in progress. */
  stagingMinAgeMs: number;
}

export const DEFAULT_FSCK_OPTIONS: FsckOptions = { repair: false, orphanMinAgeMs: 10 * 60_000, stagingMinAgeMs: 3600_000 };

export interface FsckReport {
  /** Objects looked at: content and staged uploads (the marker and resumable uploads excluded). */
  files: number;
  /** Resources with content whose file was checked. */
  resources: number;
  /** Content keys no resource points at, and staged uploads left by a crash. */
  orphans: string[];
  /** Resources (active or in the trash) whose content file is missing. */
  missing: ContentHolder[];
  /** With --repair: orphans removed, and resources whose content was detached (rev + 1, in the feed). */
  repaired: { orphansRemoved: number; contentCleared: number } | null;
}

export const problemsFound = (r: FsckReport): boolean => r.orphans.length > 0 || r.missing.length > 0;

const PAGE = 1000;

/**
 * Compares the content store with the rows that point at its keys, read-only unless
 * `repair`. Both directions are checked twice before they count: a file is an orphan only when it
 * is old enough and no row points at it; content is missing only when the row still points at the
 * same key after the file was found absent (content replaced meanwhile is not missing).
 */
export class Fsck {
  constructor(
    private readonly store: ContentStore,
    private readonly content: ContentRepository,
    private readonly owners: OwnerTransactions,
  ) {}

  async run(options: FsckOptions = DEFAULT_FSCK_OPTIONS): Promise<FsckReport> {
    const report: FsckReport = { files: 0, resources: 0, orphans: [], missing: [], repaired: null };
    await this.findOrphans(options, report);
    await this.findMissing(report);
    if (options.repair) report.repaired = { orphansRemoved: await this.removeOrphans(report.orphans), contentCleared: await this.clearMissing(report.missing) };
    return report;
  }

  private async findOrphans(options: FsckOptions, report: FsckReport): Promise<void> {
    const now = Date.now();
    let batch: string[] = [];
    const flush = async () => {
      const referenced = await this.content.referenced(batch);
      for (const key of batch) if (!referenced.has(key)) report.orphans.push(key);
      batch = [];
    };
    for await (const file of this.store.walk()) {
      report.files++;
      // A content key is dated from its placing (ContentStore.place), so bytes received long ago
      // but placed moments ago, by a commit that may not be visible yet, are young.
      const minAge = isStagingKey(file.key) ? options.stagingMinAgeMs : options.orphanMinAgeMs;
      if (now - file.modifiedAt.getTime() < minAge) continue;
      batch.push(file.key);
      if (batch.length >= PAGE) await flush();
    }
    if (batch.length > 0) await flush();
    report.orphans.sort();
  }

  private async findMissing(report: FsckReport): Promise<void> {
    let after = '';
    for (;;) {
      const holders = await this.content.holders(after, PAGE);
      if (holders.length === 0) break;
      for (const holder of holders) {
        report.resources++;
        if (await this.store.stat(holder.storageKey)) continue;
        if ((await this.content.storageKeyOf(holder.id)) === holder.storageKey) report.missing.push(holder);
      }
      after = holders[holders.length - 1]!.id;
    }
  }

  /** Removes each orphan that is still unreferenced at the moment of removal. */
  private async removeOrphans(orphans: string[]): Promise<number> {
    let removed = 0;
    for (const key of orphans) {
      if ((await this.content.referenced([key])).size > 0) continue;
      await this.store.remove(key);
      removed++;
    }
    return removed;
  }

  /** Detaches missing content in its owner's transaction (rev + 1, a feed position, the feed told). */
  private async clearMissing(missing: ContentHolder[]): Promise<number> {
    let cleared = 0;
    for (const holder of missing) {
      const done = await this.owners.run(holder.userId, async (trx, clock) => {
        const repo = this.content.withTransaction(trx);
        if ((await repo.storageKeyOf(holder.id)) !== holder.storageKey) return false;
        if (await this.store.stat(holder.storageKey)) return false;
        return repo.clearContent(holder.userId, holder.id, holder.storageKey, new Date(), clock.next());
      });
      if (done) cleared++;
    }
    return cleared;
  }
}
