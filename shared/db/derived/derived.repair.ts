import type { Knex } from 'knex';
import { CountersRepository, type CountDifference } from './counters.repository';
import { SearchIndexRepository, type IndexDifference } from './search-index.repository';

export interface RepairReport {
  users: number;
  /** Folder counts that differed from the recomputed ones (and were replaced unless checking). */
  counts: CountDifference[];
  /** Owners whose search index differed (and was rebuilt unless checking). */
  index: IndexDifference[];
}

/**
 * Recomputes the derived data (per-folder file counts, search index) from `resources`, owner by
 * owner, each owner inside its own transaction with the owner's row locked like every write, so it
 * can run while the service does. Used by `npm run fsck` and by the backfill migration.
 */
export class DerivedRepair {
  constructor(private readonly db: Knex) {}

  /** Compares every owner's derived data with a recomputation; with `fix`, rebuilds the owners that differ. */
  async run(options: { fix: boolean; userIds?: string[] }): Promise<RepairReport> {
    const report: RepairReport = { users: 0, counts: [], index: [] };
    for (const userId of options.userIds ?? (await this.owners())) {
      report.users++;
      await this.locked(userId, async (trx) => {
        const counters = new CountersRepository(trx);
        const index = new SearchIndexRepository(trx);
        const counts = await counters.differences(userId);
        const grams = await index.differences(userId);
        report.counts.push(...counts);
        if (grams.stale > 0 || grams.missing > 0) report.index.push(grams);
        if (!options.fix) return;
        if (counts.length > 0) await counters.rebuild(userId);
        if (grams.stale > 0 || grams.missing > 0) await index.rebuild(userId);
      });
    }
    return report;
  }

  /** Rebuilds every owner's derived data without comparing (the backfill of an existing database). */
  async rebuildAll(): Promise<void> {
    for (const userId of await this.owners()) {
      await this.locked(userId, async (trx) => {
        await new CountersRepository(trx).rebuild(userId);
        await new SearchIndexRepository(trx).rebuild(userId);
      });
    }
  }

  /** Rebuilds one owner's derived data (bulk loads: the bench's seeding). */
  rebuild(userId: string): Promise<void> {
    return this.locked(userId, async (trx) => {
      await new CountersRepository(trx).rebuild(userId);
      await new SearchIndexRepository(trx).rebuild(userId);
    });
  }

  private async owners(): Promise<string[]> {
    return this.db('users').orderBy('id').pluck('id');
  }

  private locked(userId: string, work: (trx: Knex.Transaction) => Promise<void>): Promise<void> {
    return this.db.transaction(async (trx) => {
      await trx('users').where({ id: userId }).forUpdate().first('id');
      await work(trx);
    });
  }
}
