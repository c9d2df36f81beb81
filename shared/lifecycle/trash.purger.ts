import { NO_DEVICE, type ChangeAuthor, type OwnerTransactions } from '../db/owner.transaction';
import type { PurgedEntry, TrashRepository } from '../db/repositories/trash.repository';
import type { Logger } from '../logger';
import type { ContentStore } from '../storage/content.store';

export interface PurgeRun {
  purged: number;
  filesRemoved: number;
}

const DAY_MS = 24 * 3600 * 1000;

export const retentionMs = (days: number): number => Math.round(days * DAY_MS);

/**
 * Purging, for DELETE /trash/:id and for the retention job alike: the rows become tombstones in one
 * owner transaction (new feed position, rev + 1, feed notified), then the content leaves the store. The
 * order matters: a crash after the commit leaves an orphan file (fsck removes it), never a restorable
 * resource whose content is gone.
 */
export class TrashPurger {
  constructor(
    private readonly owners: OwnerTransactions,
    private readonly trash: TrashRepository,
    private readonly store: ContentStore,
    private readonly logger?: Logger,
  ) {}

  /** Purges one resource of the owner's trash and, for a folder, what was deleted with it. False when it is not in the trash. */
  async purgeTree(author: ChangeAuthor, id: string): Promise<boolean> {
    const { userId } = author;
    const purged = await this.owners.run(author, async (trx, clock) => {
      const repo = this.trash.withTransaction(trx);
      const root = await repo.findForUpdate(userId, id);
      if (!root) return undefined;
      const ids = [root.id, ...(await repo.deletedWith(root))];
      return repo.purge(userId, ids, new Date(), () => clock.next());
    });
    if (!purged) return false;
    await this.removeFiles(purged);
    return true;
  }

  /**
   * Purges everything deleted before `cutoff`, at most `chunk` resources per owner transaction, and
   * stops after `maxChunks` (the next run continues). Safe to run twice at once: each transaction
   * re-reads, under the owner's lock, what is still in the trash.
   */
  async purgeExpired(cutoff: Date, chunk = 500, maxChunks = 100): Promise<PurgeRun> {
    const run: PurgeRun = { purged: 0, filesRemoved: 0 };
    for (let round = 0; round < maxChunks; round++) {
      const due = await this.trash.expired(cutoff, chunk);
      if (due.length === 0) break;
      const byOwner = new Map<string, string[]>();
      for (const entry of due) byOwner.set(entry.userId, [...(byOwner.get(entry.userId) ?? []), entry.id]);
      let progressed = false;
      for (const [userId, ids] of byOwner) {
        // No device's request: the feed shows these purges with deviceId "".
        const purged = await this.owners.run({ userId, deviceId: NO_DEVICE }, (trx, clock) => {
          const repo = this.trash.withTransaction(trx);
          return repo.purge(userId, ids, new Date(), () => clock.next(), cutoff);
        });
        if (purged.length > 0) progressed = true;
        run.purged += purged.length;
        run.filesRemoved += await this.removeFiles(purged);
      }
      // Everything found was purged by another run meanwhile: leave the rest to that run.
      if (!progressed) break;
    }
    return run;
  }

  /**
   * Removes the content the commit detached. Content already gone is fine; any other failure is
   * counted, not thrown: the rows are committed, and what is left is an orphan that fsck --repair removes.
   */
  private async removeFiles(purged: PurgedEntry[]): Promise<number> {
    let removed = 0;
    let failed = 0;
    // A purged file's versions go with it.
    for (const storageKey of purged.flatMap((p) => [p.storageKey, ...p.versionKeys])) {
      if (!storageKey) continue;
      try {
        await this.store.remove(storageKey);
        removed++;
      } catch {
        failed++;
      }
    }
    if (failed > 0) this.logger?.warn({ files: failed }, 'purged content could not be removed from the store; fsck --repair will');
    return removed;
  }
}
