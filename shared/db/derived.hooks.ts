import type { Knex } from 'knex';
import { CountersRepository } from './counters.repository';
import { SearchIndexRepository } from './search-index.repository';

/**
 * The one API through which a write keeps the data derived from `resources` exact: the file counts per
 * folder (`total` of a listing) and the search index. Every method runs inside the caller's
 * transaction, the one OwnerTransactions.run opened with the owner's row locked, so the derived rows
 * change with the resources or not at all, and no new lock order appears. Each method takes ids of any
 * kind (folders are ignored, only active files count) and reads their current state itself, so a
 * caller only says when:
 *
 * - `activated(ids)`   AFTER rows became active: created, uploaded, restored from the trash.
 * - `deactivating(ids)` BEFORE active rows stop being active: soft delete (also of a subtree), purge.
 * - `moving(ids, change)` around a change of parent_id (counts follow the files).
 * - `renaming(ids, change)` around a change of name (index entries follow the name).
 *
 * Rows already inactive need nothing (a purge of trashed rows, a restore's rows before it). After a
 * bug or a manual edit, `npm run repair-derived` recomputes everything.
 */
export class DerivedData {
  private readonly counters: CountersRepository;
  private readonly index: SearchIndexRepository;

  constructor(db: Knex | Knex.Transaction) {
    this.counters = new CountersRepository(db);
    this.index = new SearchIndexRepository(db);
  }

  async activated(userId: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.counters.adjust(userId, ids, 1);
    await this.index.add(userId, ids);
  }

  async deactivating(userId: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.counters.adjust(userId, ids, -1);
    await this.index.remove(userId, ids);
  }

  moving<T>(userId: string, ids: string[], change: () => Promise<T>): Promise<T> {
    return around(change, () => this.counters.adjust(userId, ids, -1), () => this.counters.adjust(userId, ids, 1));
  }

  renaming<T>(userId: string, ids: string[], change: () => Promise<T>): Promise<T> {
    return around(change, () => this.index.remove(userId, ids), () => this.index.add(userId, ids));
  }
}

/**
 * take, change, put back. A change that fails (a name clash) may not end the transaction: the sync
 * batch commits the ops before it. So the rows are put back also then, as they still are.
 */
async function around<T>(change: () => Promise<T>, take: () => Promise<void>, put: () => Promise<void>): Promise<T> {
  await take();
  let result: T;
  try {
    result = await change();
  } catch (err) {
    await put();
    throw err;
  }
  await put();
  return result;
}
