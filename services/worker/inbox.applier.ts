import type { Knex } from 'knex';
import type { RedisConnection } from '../../shared/redis/redis.connection';
import type { Db } from '../../shared/db/knex';
import { InboxRepository, type InboxBatch } from '../../shared/db/repositories/inbox.repository';
import type { ChangeClock, OwnerCommit, OwnerTransactions } from '../../shared/db/owner.transaction';
import type { Logger } from '../../shared/logger';
import { batchDoneChannel, type BatchDoneMessage, type RingJobData, type RingResult } from '../../shared/queue/ring.contract';
import type { BatchResult } from '../../shared/sync/batch.result';
import { BatchApplier } from './batch.applier';
import { killConnection } from './worker.session';

export interface InboxApplierOptions {
  databaseUrl: string;
  queuePrefix: string;
  deadlineMs: number;
  /** A batch still running after this long is logged, and again at every further interval. */
  slowLogMs: number;
}

/** Called for every batch committed as done, with its apply time. */
export type BatchObserver = (result: BatchResult, ms: number) => void;

/** Errors of the connection itself: nothing was decided, the batch stays pending and is rung again. */
const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'PROTOCOL_CONNECTION_LOST', 'ER_CON_COUNT_ERROR', 'ER_SERVER_SHUTDOWN']);

function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return (code !== undefined && CONNECTION_ERRORS.has(code)) || (err instanceof Error && err.name === 'KnexTimeoutError');
}

class DeadlineExceeded extends Error {}

/** A batch applied by a ring, with its result (also as the JSON text stored and announced). */
interface Applied {
  batch: InboxBatch;
  result: BatchResult;
  resultJson: string;
  ms: number;
}

/**
 * One ring in progress: what its deadline and its slow-batch log need to know, written by the steps
 * of its transaction. At the deadline the transaction's connection is killed, which ends even a wait
 * for a lock; once the transaction has ended that connection is back in the pool and is left alone.
 */
class RingRun {
  readonly started = Date.now();
  /** The transaction's connection, learnt before the owner's lock is waited for. */
  threadId: number | undefined;
  expired = false;
  /** The batches the transaction holds, oldest first. */
  batches: InboxBatch[] = [];
  /** The batch being applied. */
  current: string | undefined;
  private ended = false;
  private readonly deadline: NodeJS.Timeout;
  private readonly slow: NodeJS.Timeout;

  constructor(
    readonly data: RingJobData,
    private readonly log: Logger,
    options: InboxApplierOptions,
  ) {
    this.deadline = setTimeout(() => this.expire(options.databaseUrl), options.deadlineMs);
    this.slow = setInterval(() => log.warn({ batchId: this.batchId, ms: this.elapsed, pending: this.batches.length }, 'sync batch still running'), options.slowLogMs);
  }

  get batchId(): string {
    return this.current ?? this.data.batchId;
  }

  get elapsed(): number {
    return Date.now() - this.started;
  }

  /** Throws once the deadline has passed: the transaction must not commit. */
  checkDeadline(): void {
    if (this.expired) throw new DeadlineExceeded();
  }

  /** The transaction has ended, committed or not. */
  end(): void {
    this.ended = true;
    clearTimeout(this.deadline);
    clearInterval(this.slow);
  }

  private expire(databaseUrl: string): void {
    if (this.ended) return;
    this.expired = true;
    this.log.warn({ batchId: this.batchId, ms: this.elapsed }, 'sync batch over its deadline: rolling it back');
    if (this.threadId === undefined) return;
    killConnection(databaseUrl, this.threadId).catch((err: Error) => this.log.error({ err: err.message }, 'could not end an expired sync batch'));
  }
}

/**
 * Answers one ring: applies every pending batch of the device up to the rung one, oldest first, in one
 * transaction that holds the owner's tree lock and the batches' rows. A ring whose batch another ring
 * already applied finds nothing to do. The transaction has a deadline: when it passes, the
 * transaction's connection is killed (rolling everything back) and the batches are marked failed, so
 * their clients get 503 and a retry is safe.
 */
export class InboxApplier {
  private readonly applier: BatchApplier;

  constructor(
    private readonly db: Db,
    private readonly owners: OwnerTransactions,
    private readonly publisher: RedisConnection,
    private readonly options: InboxApplierOptions,
    private readonly logger: Logger,
    private readonly observe: BatchObserver = () => undefined,
  ) {
    this.applier = new BatchApplier(owners);
  }

  async ring(data: RingJobData, log: Logger): Promise<RingResult> {
    const run = new RingRun(data, log, this.options);
    let commit: OwnerCommit<Applied[]>;
    try {
      commit = await this.owners.commit(
        { userId: data.userId, deviceId: data.deviceId },
        (trx, clock) => this.applyBatches(run, trx, clock),
        (trx) => this.lockOwnerAndBatches(run, trx),
      );
    } catch (err) {
      run.end();
      if (!run.expired && isConnectionError(err)) throw err;
      const ids = run.batches.length > 0 ? run.batches.map((b) => b.id) : [data.batchId];
      await this.fail(ids, run.expired ? 'the batch ran past its deadline' : errorText(err), log);
      return { applied: [] };
    }
    run.end();
    const done = commit.value;
    // The waiting clients hear right after the commit, ahead of the change feed's doorbell and of
    // everything else this ring still does.
    const announced = done.map(({ batch, resultJson }) => this.announce({ id: batch.id, result: resultJson }));
    if (commit.changed) this.owners.notifyChanged(data.userId);
    for (const { batch, result, ms } of done) {
      this.observe(result, ms);
      log.info({ batchId: batch.id, requestId: batch.requestId, applied: result.applied.length, failed: result.failed?.error.code ?? null, ms }, 'sync batch applied');
    }
    await Promise.all(announced);
    return { applied: done.map((d) => d.batch.id) };
  }

  /**
   * The transaction's first step: learns its connection (so the deadline can end even a lock wait),
   * then locks the owner's row and the device's pending batches up to the rung one in one statement.
   * Without an owner row (one removed by hand: the service only marks users deleted) the batches are
   * locked on their own. Resolves to the owner's feed position.
   */
  private async lockOwnerAndBatches(run: RingRun, trx: Knex.Transaction): Promise<number | undefined> {
    run.threadId = ((await trx.client.acquireConnection()) as { threadId: number }).threadId;
    const { userId, deviceId, batchId } = run.data;
    const inbox = new InboxRepository(trx);
    const owner = await inbox.lockOwnerAndPending(userId, deviceId, batchId);
    run.batches = owner ? owner.batches : await inbox.lockPending(deviceId, userId, batchId);
    return owner?.changeSeq;
  }

  /** The transaction's second step: applies the locked batches in order and marks each done. */
  private async applyBatches(run: RingRun, trx: Knex.Transaction, clock: ChangeClock): Promise<Applied[]> {
    const inbox = new InboxRepository(trx);
    const applied: Applied[] = [];
    for (const batch of run.batches) {
      run.checkDeadline();
      run.current = batch.id;
      const t0 = Date.now();
      const result = await this.applier.applyLocked(trx, clock, { userId: batch.userId, deviceId: batch.deviceId, opsJson: batch.ops });
      const resultJson = JSON.stringify(result);
      await inbox.markDone(batch.id, resultJson, new Date());
      applied.push({ batch, result, resultJson, ms: Date.now() - t0 });
    }
    run.checkDeadline();
    return applied;
  }

  /**
   * Gives up batches that were rolled back (deadline, lock wait, a refused statement). Only those still
   * pending change; waiting gateways are told to read the rows. When even this cannot be written
   * (their rows are locked by a frozen transaction), the error goes up: the batches stay pending.
   */
  private async fail(ids: string[], reason: string, log: Logger): Promise<void> {
    log.warn({ batchIds: ids, reason }, 'sync batches rolled back and failed; their clients get 503');
    await new InboxRepository(this.db).markFailed(ids, reason, new Date());
    for (const id of ids) await this.announce({ id });
  }

  /** Tells waiting gateways; when Redis cannot take it they find out by polling MySQL. */
  private async announce(message: BatchDoneMessage): Promise<void> {
    try {
      await this.publisher.publish(batchDoneChannel(this.options.queuePrefix), JSON.stringify(message));
    } catch (err) {
      this.logger.debug({ err: (err as Error).message, batchId: message.id }, 'could not announce a finished batch');
    }
  }
}

function errorText(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e?.code ?? (err instanceof Error ? err.message : String(err));
}
