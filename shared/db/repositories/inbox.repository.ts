import type { Knex } from 'knex';
import { STATEMENTS, statementTag, tagText } from '../statement.tags';

export type BatchStatus = 'pending' | 'done' | 'cancelled' | 'failed';

/** A batch as the worker applies it. */
export interface InboxBatch {
  id: string;
  deviceId: string;
  userId: string;
  requestId: string;
  /** The `ops` array as JSON text, numbers exactly as the client wrote them. */
  ops: string;
}

/** Where a batch stands, and its stored outcome once it is no longer pending. */
export interface BatchOutcomeRow {
  id: string;
  status: BatchStatus;
  /** JSON text: the result of a done batch, `{"message"}` of a failed one, null otherwise. */
  result: string | null;
}

export interface NewBatch {
  deviceId: string;
  userId: string;
  requestId: string;
  ops: string;
  createdAt: Date;
}

/** A pending batch the sweeper rings again. */
export interface StaleBatch {
  id: string;
  deviceId: string;
  userId: string;
  requestId: string;
}

/**
 * The only SQL about the sync inbox (table sync_batches). Batch ids are BIGINT and travel as decimal
 * strings, like every BIGINT of this code base.
 */
export class InboxRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  /**
   * Records an accepted batch in one autocommit statement, if its device and user still exist (not
   * deleted): undefined when they do not, and nothing is recorded. That check is the gateway's
   * authentication of the batch (its token was verified already), made here so it costs no round
   * trip of its own; the user's row is only read, never locked (its lock is the owner's). The
   * statement's SELECT locks the device row before the row is written (the auto-increment id is
   * taken at the write), and the statement's own commit releases it: two batches of one device are
   * numbered and committed one after the other, so id order is acceptance order and commit order,
   * and a worker that sees batch N also sees every earlier batch of the device. One round trip in
   * all: no principal lookup, no BEGIN/COMMIT of a transaction of its own.
   */
  async accept(batch: NewBatch): Promise<string | undefined> {
    const [header] = (await this.db.raw(
      `${statementTag(STATEMENTS.acceptBatch)} ` +
        'INSERT INTO sync_batches (device_id, user_id, status, ops, request_id, created_at) ' +
        "SELECT d.id, ?, 'pending', ?, ?, ? FROM devices d WHERE d.id = ? AND d.deleted_at IS NULL " +
        // A subquery's rows are not locked by the outer FOR UPDATE (MariaDB and MySQL alike).
        'AND EXISTS (SELECT 1 FROM users u WHERE u.id = ? AND u.deleted_at IS NULL) FOR UPDATE',
      [batch.userId, batch.ops, batch.requestId, batch.createdAt, batch.deviceId, batch.userId],
    )) as [{ affectedRows: number; insertId: number | string }];
    return header.affectedRows === 1 ? String(header.insertId) : undefined;
  }

  /** The device's pending batches up to `upToId`, oldest first, locked until the transaction ends. */
  async lockPending(deviceId: string, userId: string, upToId: string): Promise<InboxBatch[]> {
    const rows = await this.db
      .from(this.db.raw('sync_batches FORCE INDEX (ix_sync_batches_device)'))
      // The owner's lock is held for this user only: a batch another user sent from the same device
      // waits for a ring of its own.
      .where({ device_id: deviceId, user_id: userId, status: 'pending' })
      .andWhere('id', '<=', upToId)
      .orderBy('id')
      .forUpdate()
      .comment(tagText(STATEMENTS.lockPending))
      .select<{ id: string | number; device_id: string; user_id: string; request_id: string; ops: string }[]>(
        'id',
        'device_id',
        'user_id',
        'request_id',
        'ops',
      );
    return rows.map((r) => ({ id: String(r.id), deviceId: r.device_id, userId: r.user_id, requestId: r.request_id, ops: r.ops }));
  }

  /**
   * Locks the owner's row and, in the same statement, the device's pending batches of that owner up
   * to `upToId`: lockPending with the owner's lock, in one round trip. The owner's row is read (and
   * locked) first, the batches after it is granted, so they are seen as the previous holder of the
   * owner's lock committed them. Undefined when the owner's row does not exist.
   */
  async lockOwnerAndPending(userId: string, deviceId: string, upToId: string): Promise<{ changeSeq: number; batches: InboxBatch[] } | undefined> {
    const [rows] = (await this.db.raw(
      `${statementTag(STATEMENTS.lockOwnerAndPending)} ` +
        'SELECT u.change_seq, b.id, b.device_id, b.user_id, b.request_id, b.ops FROM users u ' +
        // The device's index, whatever the estimates say: read by status alone, the locking read would
        // lock (and wait for) other devices' pending batches.
        "LEFT JOIN sync_batches b FORCE INDEX (ix_sync_batches_device) ON b.device_id = ? AND b.user_id = u.id AND b.status = 'pending' AND b.id <= ? " +
        'WHERE u.id = ? FOR UPDATE',
      [deviceId, upToId, userId],
    )) as [Array<{ change_seq: string | number; id: string | number | null; device_id: string; user_id: string; request_id: string; ops: string }>];
    if (rows.length === 0) return undefined;
    const batches = rows
      .filter((r) => r.id !== null)
      .map((r) => ({ id: String(r.id), deviceId: r.device_id, userId: r.user_id, requestId: r.request_id, ops: r.ops }))
      // Oldest first; sorted here rather than in SQL, which would cost the join a temporary table.
      .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    return { changeSeq: Number(rows[0]!.change_seq), batches };
  }

  async markDone(id: string, resultJson: string, now: Date): Promise<void> {
    await this.db('sync_batches').where({ id }).update({ status: 'done', result: resultJson, finished_at: now });
  }

  /** Gives up pending batches that could not be applied; returns how many it changed. */
  async markFailed(ids: string[], message: string, now: Date): Promise<number> {
    if (ids.length === 0) return 0;
    return this.db('sync_batches')
      .whereIn('id', ids)
      .andWhere({ status: 'pending' })
      .update({ status: 'failed', result: JSON.stringify({ message }), finished_at: now });
  }

  /** Withdraws a batch that is still pending: true when it was, so it will never be applied. */
  async cancel(id: string, now: Date): Promise<boolean> {
    const n = await this.db('sync_batches').where({ id, status: 'pending' }).update({ status: 'cancelled', finished_at: now });
    return n > 0;
  }

  /** Batches of these ids that are no longer pending, with their outcome. One primary-key lookup. */
  async finished(ids: string[]): Promise<BatchOutcomeRow[]> {
    if (ids.length === 0) return [];
    const rows = await this.db('sync_batches')
      .whereIn('id', ids)
      .andWhereNot({ status: 'pending' })
      .select<{ id: string | number; status: BatchStatus; result: string | null }[]>('id', 'status', 'result');
    return rows.map((r) => ({ id: String(r.id), status: r.status, result: r.result }));
  }

  /** Pending batches accepted before `before`, oldest first: their ring may have been lost. */
  async stalePending(before: Date, limit: number): Promise<StaleBatch[]> {
    const rows = await this.db('sync_batches')
      .where({ status: 'pending' })
      .andWhere('created_at', '<', before)
      .orderBy('id')
      .limit(limit)
      .select<{ id: string | number; device_id: string; user_id: string; request_id: string }[]>('id', 'device_id', 'user_id', 'request_id');
    return rows.map((r) => ({ id: String(r.id), deviceId: r.device_id, userId: r.user_id, requestId: r.request_id }));
  }

  /** Deletes finished batches accepted before `before`, at most `limit`; returns how many. */
  async prune(before: Date, limit: number): Promise<number> {
    return this.db('sync_batches').where('created_at', '<', before).andWhereNot({ status: 'pending' }).limit(limit).delete();
  }
}
