import { Queue } from 'bullmq';
import type { Db } from '../../../shared/db/knex';
import { InboxRepository, type BatchOutcomeRow } from '../../../shared/db/repositories/inbox.repository';
import type { Logger } from '../../../shared/logger';
import { AppError, unavailable } from '../../../shared/errors';
import { bullPrefix, connectRedis, type RedisConnection, type RedisTarget } from '../../../shared/redis/redis.connection';
import { batchDoneChannel, ringJob, SYNC_QUEUE_NAME, type BatchDoneMessage, type RingJobData, type RingResult } from '../../../shared/queue/ring.contract';
import type { BatchResult } from '../../../shared/sync/batch.result';

/** A batch as the sync route hands it over. */
export interface SyncSubmission {
  requestId: string;
  userId: string;
  deviceId: string;
  /** The `ops` array as JSON text, numbers exactly as the client wrote them. */
  opsJson: string;
  acceptedAt: number;
}

export interface BatchSubmitterOptions {
  redis: RedisTarget;
  prefix: string;
  timeoutMs: number;
  db: Db;
  /** How often waiting batches are looked up in MySQL, in case their message was lost. */
  pollMs?: number;
  /** How long Redis may be unreachable while clients wait before their batches are withdrawn. */
  redisGraceMs?: number;
}

interface Waiter {
  resolve: (result: BatchResult) => void;
  reject: (err: AppError) => void;
  since: number;
  timer: NodeJS.Timeout;
}

/**
 * Hands sync batches to the workers and awaits their results. A batch is recorded in MySQL first
 * (the durable inbox), then the worker is rung through the queue. The result comes as a Redis
 * message from the worker; MySQL is polled by primary key as well, so a lost message or a Redis that
 * lost its data still answers. A client never waits for nothing: on the timeout, or when Redis stays
 * unreachable, the batch is withdrawn in MySQL (or its result read, when it finished meanwhile).
 */
export class BatchSubmitter {
  readonly queues: Queue<RingJobData, RingResult>[];
  private readonly queue: Queue<RingJobData, RingResult>;
  private readonly connection: RedisConnection;
  private readonly subscriber: RedisConnection;
  private readonly inbox: InboxRepository;
  private readonly waiting = new Map<string, Waiter>();
  private readonly poller: NodeJS.Timeout;
  private subscribed: Promise<unknown>;
  private redisDownSince: number | undefined;
  private polling = false;

  constructor(
    private readonly options: BatchSubmitterOptions,
    private readonly logger: Logger,
  ) {
    this.inbox = new InboxRepository(options.db);
    this.connection = connectRedis(options.redis, 'producer');
    this.connection.on('error', (err) => logger.warn({ err: err.message }, 'redis producer connection error'));
    this.queue = new Queue<RingJobData, RingResult>(SYNC_QUEUE_NAME, { connection: this.connection, prefix: bullPrefix(options.redis, options.prefix) });
    this.queue.on('error', (err) => logger.debug({ err: err.message }, 'sync queue error'));
    this.queues = [this.queue];
    this.subscriber = connectRedis(options.redis, 'blocking');
    this.subscriber.on('error', (err) => logger.debug({ err: err.message }, 'redis subscriber connection error'));
    this.subscriber.on('message', (_channel: string, text: string) => this.onMessage(text));
    this.subscribed = this.subscriber.subscribe(batchDoneChannel(options.prefix));
    this.subscribed.catch(() => undefined);
    this.poller = setInterval(() => void this.tick(), options.pollMs ?? 1000);
    this.poller.unref();
  }

  /** Resolves once finished-batch messages are being received. */
  async ready(): Promise<void> {
    await this.subscribed;
  }

  get redisReady(): boolean {
    return this.connection.status === 'ready';
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.connection.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  /**
   * Records the batch, rings a worker and waits for the batch's result, at most `timeoutMs`. Refuses
   * it (401, nothing recorded) when its device or user no longer exists: the accept checks them.
   */
  async submit(data: SyncSubmission): Promise<BatchResult> {
    if (!this.redisReady) throw unavailable('the sync queue is unavailable', 2);
    const batchId = await this.inbox.accept({
      deviceId: data.deviceId,
      userId: data.userId,
      requestId: data.requestId,
      ops: data.opsJson,
      createdAt: new Date(data.acceptedAt),
    });
    if (batchId === undefined) throw new AppError('UNAUTHORIZED', 'missing or invalid token');
    const result = new Promise<BatchResult>((resolve, reject) => {
      const timer = setTimeout(() => void this.withdraw(batchId, 'no sync result in time, retry the batch'), this.options.timeoutMs);
      this.waiting.set(batchId, { resolve, reject, since: Date.now(), timer });
    });
    try {
      const ring = ringJob({ batchId, deviceId: data.deviceId, userId: data.userId, requestId: data.requestId });
      await this.queue.add(ring.name, ring.data, ring.opts);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, batchId }, 'could not ring a sync worker');
      void this.withdraw(batchId, 'the sync queue is unavailable');
    }
    return result;
  }

  /**
   * Withdraws a batch whose client will not wait any longer. Still pending: it is cancelled and will
   * never apply. Finished meanwhile: its stored outcome is the answer. Locked by a worker that is
   * applying it (or froze while doing so): 503 all the same; if that worker commits later, the batch
   * still applies in acceptance order and a retry of it is answered as duplicates.
   */
  private async withdraw(batchId: string, reason: string): Promise<void> {
    if (!this.waiting.has(batchId)) return;
    try {
      if (await this.cancel(batchId)) return this.settle(batchId, (w) => w.reject(unavailable(reason, 2)));
      const [row] = await this.inbox.finished([batchId]);
      if (row) return this.settleFrom(row);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, batchId }, 'could not withdraw a sync batch; answering 503');
    }
    this.settle(batchId, (w) => w.reject(unavailable(reason, 2)));
  }

  /** Cancels a pending batch, waiting at most a second for a row lock. */
  private async cancel(batchId: string): Promise<boolean> {
    return this.options.db.transaction(async (trx) => {
      await trx.raw('SET SESSION innodb_lock_wait_timeout = 1');
      try {
        return await new InboxRepository(trx).cancel(batchId, new Date());
      } finally {
        await trx.raw('SET SESSION innodb_lock_wait_timeout = @@GLOBAL.innodb_lock_wait_timeout');
      }
    });
  }

  private onMessage(text: string): void {
    let message: BatchDoneMessage;
    try {
      message = JSON.parse(text) as BatchDoneMessage;
    } catch {
      return;
    }
    if (!this.waiting.has(message.id)) return;
    if (typeof message.result === 'string') {
      this.settleFrom({ id: message.id, status: 'done', result: message.result });
    } else {
      void this.inbox.finished([message.id]).then(
        ([row]) => row && this.settleFrom(row),
        () => undefined,
      );
    }
  }

  /**
   * Every second while clients wait: looks up batches waiting longer than a poll interval (their
   * message may be lost), and withdraws every batch when Redis has been unreachable for a while.
   */
  private async tick(): Promise<void> {
    if (this.waiting.size === 0 || this.polling) {
      this.redisDownSince = undefined;
      return;
    }
    this.polling = true;
    try {
      const up = this.connection.status === 'ready' && this.subscriber.status === 'ready';
      const now = Date.now();
      if (up) this.redisDownSince = undefined;
      else this.redisDownSince ??= now;
      if (this.redisDownSince !== undefined && now - this.redisDownSince >= (this.options.redisGraceMs ?? 2000)) {
        await Promise.all([...this.waiting.keys()].map((id) => this.withdraw(id, 'the sync queue is unavailable, retry the batch')));
        return;
      }
      const due = [...this.waiting.entries()].filter(([, w]) => now - w.since >= (this.options.pollMs ?? 1000)).map(([id]) => id);
      for (let i = 0; i < due.length; i += 500) {
        for (const row of await this.inbox.finished(due.slice(i, i + 500))) this.settleFrom(row);
      }
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'could not look up waiting sync batches');
    } finally {
      this.polling = false;
    }
  }

  private settleFrom(row: BatchOutcomeRow): void {
    if (row.status === 'done' && row.result !== null) {
      const result = JSON.parse(row.result) as BatchResult;
      return this.settle(row.id, (w) => w.resolve(result));
    }
    if (row.status === 'pending') return;
    const reason = row.status === 'failed' ? 'the batch could not be applied in time and was not applied, retry it' : 'the batch was withdrawn, retry it';
    this.settle(row.id, (w) => w.reject(unavailable(reason, 2)));
  }

  private settle(batchId: string, action: (w: Waiter) => void): void {
    const waiter = this.waiting.get(batchId);
    if (!waiter) return;
    this.waiting.delete(batchId);
    clearTimeout(waiter.timer);
    action(waiter);
  }

  /** Closes the connections; when Redis is gone they are dropped rather than waited for. */
  async close(): Promise<void> {
    clearInterval(this.poller);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise((resolve) => (timer = setTimeout(resolve, 2000)));
    await Promise.race([this.queue.close().catch(() => undefined), deadline]);
    clearTimeout(timer);
    this.subscriber.disconnect();
    this.connection.disconnect();
  }
}
