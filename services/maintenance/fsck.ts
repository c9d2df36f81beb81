import type { ContentHolder, ContentRepository } from '../../shared/db/repositories/content.repository';
import { NO_DEVICE, type OwnerTransactions } from '../../shared/db/owner.transaction';
import type { UsageDifference, UsageRepository } from '../../shared/quota/usage.repository';
import { isStagingKey, type ContentStore } from '../../shared/storage/content.store';
import { isThumbnailKey } from '../../shared/thumbnails/thumbnail.sizes';
import { claimStoreKnowingly, readIdentity } from '../../shared/content/store.identity';
import { checkUsage } from '../../shared/quota/usage.check';
import type { DerivedRepair, RepairReport } from '../../shared/db/derived/derived.repair';
import { dropMissingVersions, findMissingVersions } from './version.check';

export interface FsckOptions {
  repair: boolean;
  /** Content files younger than this are left out: their row may be committing right now. */
  orphanMinAgeMs: number;
  /** Staged files younger than this are uploads in progress. */
  stagingMinAgeMs: number;
  /** Marks a store without a marker as the database's before checking (`--claim-store`). */
  claimStore?: boolean;
  /** Repairs even when more than a tenth of the expected content is missing (`--allow-many-missing`). */
  allowManyMissing?: boolean;
}

/** fsck will not run on this store, or will not repair it; nothing was changed. */
export class FsckRefusal extends Error {}

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
  /** Kept versions whose content is missing from the store (`id` is the version's). */
  missingVersions: ContentHolder[];
  /** Byte counters of users that differ from the rows (users.*_bytes against resources, versions, reservations). */
  usageDrift: UsageDifference[];
  /** Folder file counts and search indexes that differ from `resources` (rebuilt with --repair). */
  derived: RepairReport;
  /** With --repair: orphans removed, resources whose content was detached (rev + 1, in the feed), users whose counters were recomputed. */
  repaired: { orphansRemoved: number; contentCleared: number; versionsDropped: number; usageRepaired: number } | null;
  /** With --repair: why nothing was repaired, when so much content is missing that the store looks damaged. */
  refused?: string;
}

/**
 * More missing than this share of the expected content (and more than one resource) looks like a
 * damaged or half-mounted store rather than lost files: detaching it all would hide the damage.
 */
export const MISSING_SHARE_LIMIT = 0.1;

export function tooManyMissing(report: Pick<FsckReport, 'missing' | 'resources'>): boolean {
  return report.missing.length > 1 && report.missing.length > report.resources * MISSING_SHARE_LIMIT;
}

export const problemsFound = (r: FsckReport): boolean =>
  r.orphans.length > 0 || r.missing.length > 0 || r.missingVersions.length > 0 || r.usageDrift.length > 0 || r.derived.counts.length > 0 || r.derived.index.length > 0;

const PAGE = 1000;

/**
 * Compares the content store with the rows that point at its keys, and every derived number (byte
 * counters, folder file counts, search index) with the rows it is derived from, read-only unless
 * `repair`. Both directions of content are checked twice before they count: a file is an orphan only
 * when it is old enough and no row points at it; content is missing only when the row still points at
 * the same key after the file was found absent (content replaced meanwhile is not missing).
 */
export class Fsck {
  constructor(
    private readonly store: ContentStore,
    private readonly content: ContentRepository,
    private readonly owners: OwnerTransactions,
    private readonly usage: UsageRepository,
    private readonly derived: DerivedRepair,
  ) {}

  /**
   * Checks, and with `repair` repairs. Throws FsckRefusal, before looking at anything, when the store
   * does not carry the database's marker: on the wrong store every file would read as missing.
   */
  async run(options: FsckOptions = DEFAULT_FSCK_OPTIONS): Promise<FsckReport> {
    if (options.claimStore) await claimStoreKnowingly(this.store, this.content);
    const identity = await readIdentity(this.store, this.content);
    if (!identity.matches) {
      throw new FsckRefusal(
        identity.recorded === undefined
          ? `the database has no content store yet (start the gateway or a worker once); nothing was checked`
          : `${this.store.location} is not this database's content store (its marker: ${identity.marker ?? 'none'}, expected ${identity.recorded}); nothing was checked or changed. If it is the right store and only its marker was lost, run again with --claim-store`,
      );
    }
    const report: FsckReport = {
      files: 0,
      resources: 0,
      orphans: [],
      missing: [],
      missingVersions: [],
      usageDrift: [],
      derived: { users: 0, counts: [], index: [] },
      repaired: null,
    };
    await this.findOrphans(options, report);
    await this.findMissing(report);
    report.missingVersions = await findMissingVersions(this.store, this.content);
    if (!options.repair) {
      report.usageDrift = (await checkUsage(this.usage, this.owners, false)).drift;
      report.derived = await this.derived.run({ fix: false });
      return report;
    }
    if (tooManyMissing(report) && !options.allowManyMissing) {
      report.derived = await this.derived.run({ fix: false });
      report.refused = `${report.missing.length} of ${report.resources} resources have no content in the store, more than a tenth: the store looks damaged or incompletely mounted, so nothing was repaired. Fix the store and check again, or, if the content is really lost, repair with --allow-many-missing`;
      return report;
    }
    const orphansRemoved = await this.removeOrphans(report.orphans);
    const contentCleared = await this.clearMissing(report.missing);
    const versionsDropped = await dropMissingVersions(this.store, this.owners, report.missingVersions);
    // Last: detaching missing content moves bytes too, through the same counters. Counters only.
    const usage = await checkUsage(this.usage, this.owners, true);
    report.usageDrift = usage.drift;
    report.derived = await this.derived.run({ fix: true });
    report.repaired = { orphansRemoved, contentCleared, versionsDropped, usageRepaired: usage.usersRepaired };
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
      // Thumbnails are no file's content: the thumbnail sweep removes those of digests that are gone.
      if (isThumbnailKey(file.key)) continue;
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

  /** Content counts as missing only when the store says it does not exist; any other failure stops the check. */
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
      // An operator's repair, not a device's request: the feed shows it with deviceId "".
      const done = await this.owners.run({ userId: holder.userId, deviceId: NO_DEVICE }, async (trx, clock) => {
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
