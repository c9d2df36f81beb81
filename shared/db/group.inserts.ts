import type { Knex } from 'knex';

interface Pending {
  rows: unknown[];
  write: (rows: unknown[]) => Promise<void>;
}

const open = new WeakMap<object, GroupInserts>();

/**
 * Rows the writes of an optimistic shared transaction (OwnerTransactions.runTogether, rerunnable
 * writes without savepoints) insert, sent as one multi-row statement per table once every write of
 * the group has run, instead of one round trip each: a group of 16 small uploads then costs one
 * INSERT. A statement that fails there (a name taken) fails the group, which runs again with a
 * savepoint per write and each insert at once, so each write still meets its own error.
 */
export class GroupInserts {
  private readonly pending = new Map<string, Pending>();

  /** From here until `flush`, inserts into `trx` through a repository that asks `of` wait. */
  static begin(trx: Knex.Transaction): void {
    open.set(trx, new GroupInserts());
  }

  /** The collector of `db` when it is a transaction whose inserts wait, else undefined (insert at once). */
  static of(db: Knex | Knex.Transaction): GroupInserts | undefined {
    return open.get(db);
  }

  /** Sends what waits, a statement per table in the order the tables were first used; inserts go at once afterwards. */
  static async flush(trx: Knex.Transaction): Promise<void> {
    const group = open.get(trx);
    open.delete(trx);
    if (!group) return;
    for (const { rows, write } of group.pending.values()) await write(rows);
  }

  /** Queues `row` for `table`; `write` inserts the queued rows of that table in one statement. */
  add<R>(table: string, row: R, write: (rows: R[]) => Promise<void>): void {
    let pending = this.pending.get(table);
    if (!pending) {
      pending = { rows: [], write: write as (rows: unknown[]) => Promise<void> };
      this.pending.set(table, pending);
    }
    pending.rows.push(row);
  }
}
