import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { ContentHolder, ContentRepository } from '../../shared/db/content.repository';
import { NO_DEVICE, type OwnerTransactions } from '../../shared/db/owner.transaction';
import { contentPath } from '../../shared/lifecycle/content.files';

/** Staged uploads: a file here is in flight while young, left over by a crash once old. */
export const STAGING_PREFIX = '.staging/';

/**
 * Folders under UPLOAD_DIR that hold bytes no resource points at by design (uploads in progress kept
 * by other components, such as resumable uploads): never reported, never removed.
 */
export const IGNORED_PREFIXES: readonly string[] = ['.tus/', '.uploads/', 'tus/'];

export interface FsckOptions {
  repair: boolean;
  /** Content files younger than this are left out: their row may be committing right now. */
  orphanMinAgeMs: number;
  /** Staged files younger than this are uploads in progress. */
  stagingMinAgeMs: number;
}

export const DEFAULT_FSCK_OPTIONS: FsckOptions = { repair: false, orphanMinAgeMs: 10 * 60_000, stagingMinAgeMs: 3600_000 };

export interface FsckReport {
  /** Files looked at (ignored folders and top-level files excluded). */
  files: number;
  /** Resources with content whose file was checked. */
  resources: number;
  /** Content files no resource points at, relative to UPLOAD_DIR. */
  orphans: string[];
  /** Resources (active or in the trash) whose content file is missing. */
  missing: ContentHolder[];
  /** With --repair: orphans removed, and resources whose content was detached (rev + 1, in the feed). */
  repaired: { orphansRemoved: number; contentCleared: number } | null;
}

export const problemsFound = (r: FsckReport): boolean => r.orphans.length > 0 || r.missing.length > 0;

const PAGE = 1000;

/** Regular files under `dir` as paths relative to it with '/' separators, with their mtime. */
async function* walk(dir: string, prefix = ''): AsyncGenerator<{ key: string; mtimeMs: number }> {
  const entries = await fs.readdir(path.join(dir, prefix), { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const key = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (IGNORED_PREFIXES.some((p) => `${key}/`.startsWith(p))) continue;
      yield* walk(dir, key);
    } else if (entry.isFile() && prefix !== '') {
      // Content always sits in a folder (`<deviceId>/...`); a top-level file is not ours to judge.
      const stat = await fs.stat(path.join(dir, key)).catch(() => undefined);
      if (stat) yield { key, mtimeMs: stat.mtimeMs };
    }
  }
}

const exists = (file: string) =>
  fs.stat(file).then(
    (s) => s.isFile(),
    () => false,
  );

/**
 * Compares the content files under UPLOAD_DIR with the rows that point at them, read-only unless
 * `repair`. Both directions are checked twice before they count: a file is an orphan only when it
 * is old enough and no row points at it; content is missing only when the row still points at the
 * same key after the file was found absent (content replaced meanwhile is not missing).
 */
export class Fsck {
  constructor(
    private readonly uploadDir: string,
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
    for await (const file of walk(this.uploadDir)) {
      report.files++;
      const minAge = file.key.startsWith(STAGING_PREFIX) ? options.stagingMinAgeMs : options.orphanMinAgeMs;
      if (now - file.mtimeMs < minAge) continue;
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
        if (await exists(contentPath(this.uploadDir, holder.storageKey))) continue;
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
      await fs.rm(contentPath(this.uploadDir, key), { force: true });
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
        if (await exists(contentPath(this.uploadDir, holder.storageKey))) return false;
        return repo.clearContent(holder.userId, holder.id, holder.storageKey, new Date(), clock.next());
      });
      if (done) cleared++;
    }
    return cleared;
  }
}
