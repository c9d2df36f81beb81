import type { RedisConnection } from '../../shared/redis/redis.connection';
import type { Db } from '../../shared/db/knex';
import { InboxRepository, type InboxBatch } from '../../shared/db/inbox.repository';
import type { OwnerTransactions } from '../../shared/db/owner.transaction';
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
 * Answers one ring: applies every pending batch of the device up to the rung one, oldest first, in one
 * transaction that holds the owner's tree lock and the batches' rows. A ring whose batch another ring
 * already applied finds nothing to do. The transaction has a deadline: when it passes, the
 * transaction's connection is killed (rolling everything back) and the batches are marked failed, so
 * their clients get 503 and a retry is safe.
 */
export class InboxApplier {
  private readonly applier: BatchApplier;
  private readonly owners: OwnerTransactions;

  constructor(
    private readonly db: Db,
    owners: OwnerTransactions,
    private readonly publisher: RedisConnection,
    private readonly options: InboxApplierOptions,
    private readonly logger: Logger,
    private readonly observe: BatchObserver = () => undefined,
  ) {
    this.applier = new BatchApplier(owners);
    this.owners = owners;
  }

  async ring(data: RingJobData, log: Logger): Promise<RingResult> {
    const started = Date.now();
    let threadId: number | undefined;
    let expired = false;
    let locked: InboxBatch[] = [];
    let current: string | undefined;
    let settled = false;
    const deadline = setTimeout(() => {
      // Once the transaction has ended its connection is back in the pool: never kill it then.
      if (settled) return;
      expired = true;
      log.warn({ batchId: current ?? data.batchId, ms: Date.now() - started }, 'sync batch over its deadline: rolling it back');
      if (threadId !== undefined) {
        killConnection(this.options.databaseUrl, threadId).catch((err: Error) => log.error({ err: err.message }, 'could not end an expired sync batch'));
      }
    }, this.options.deadlineMs);
    const slow = setInterval(
      () => log.warn({ batchId: current ?? data.batchId, ms: Date.now() - started, pending: locked.length }, 'sync batch still running'),
      this.options.slowLogMs,
    );
    let done: Applied[];
    let announced: Promise<void>[] = [];
    let prelocked: InboxBatch[] | undefined;
    const endTimers = () => {
      settled = true;
      clearTimeout(deadline);
      clearInterval(slow);
    };
    try {
      done = await this.owners.run(
        { userId: data.userId, deviceId: data.deviceId },
        async (trx, clock) => {
          const inbox = new InboxRepository(trx);
          // Locked with the owner's row; without an owner row, looked up on their own as before.
          locked = prelocked ?? (await inbox.lockPending(data.deviceId, data.userId, data.batchId));
          const applied: Applied[] = [];
          for (const batch of locked) {
            if (expired) throw new DeadlineExceeded();
            current = batch.id;
            const t0 = Date.now();
            const result = await this.applier.applyLocked(trx, clock, { userId: batch.userId, deviceId: batch.deviceId, opsJson: batch.ops });
            const resultJson = JSON.stringify(result);
            await inbox.markDone(batch.id, resultJson, new Date());
            applied.push({ batch, result, resultJson, ms: Date.now() - t0 });
          }
          if (expired) throw new DeadlineExceeded();
          return applied;
        },
        {
          begun: async (trx) => {
            threadId = ((await trx.client.acquireConnection()) as { threadId: number }).threadId;
          },
          lockOwner: async (trx) => {
            const owner = await new InboxRepository(trx).lockOwnerAndPending(data.userId, data.deviceId, data.batchId);
            prelocked = owner?.batches;
            return owner?.changeSeq;
          },
          // The waiting clients hear right after the commit, ahead of the change feed's doorbell and
          // of everything else this ring still does.
          committed: (applied) => {
            announced = applied.map(({ batch, resultJson }) => this.announce({ id: batch.id, result: resultJson }));
          },
        },
      );
      endTimers();
    } catch (err) {
      endTimers();
      if (!expired && isConnectionError(err)) throw err;
      await this.fail(locked.length > 0 ? locked.map((b) => b.id) : [data.batchId], expired ? 'the batch ran past its deadline' : errorText(err), log);
      return { applied: [] };
    }
    for (const { batch, result, ms } of done) {
      this.observe(result, ms);
      log.info({ batchId: batch.id, requestId: batch.requestId, applied: result.applied.length, failed: result.failed?.error.code ?? null, ms }, 'sync batch applied');
    }
    await Promise.all(announced);
    return { applied: done.map((d) => d.batch.id) };
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
