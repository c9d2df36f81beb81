import { Job, Queue, QueueEvents } from 'bullmq';
import IORedis from 'ioredis';
import type { Logger } from '../../../shared/logger';
import { unavailable } from '../../../shared/errors';
import { newId } from '../../../shared/ids';
import {
  redisOptions,
  shardOf,
  SYNC_JOB_NAME,
  SYNC_JOB_OPTIONS,
  syncQueueNames,
  type SyncJobData,
  type SyncJobResult,
} from '../../../shared/queue/sync.contract';

interface Pending {
  resolve: (result: SyncJobResult) => void;
  reject: (err: Error) => void;
}

export interface SyncClientOptions {
  redisUrl: string;
  prefix: string;
  shards: number;
  timeoutMs: number;
}

const parseResult = (value: unknown): SyncJobResult => (typeof value === 'string' ? JSON.parse(value) : value) as SyncJobResult;

/**
 * Hands sync batches to the workers and awaits their results. One producer connection for all
 * shard queues and one event connection per shard, however many requests wait at once: results are
 * matched to waiting requests by job id.
 */
export class SyncClient {
  readonly queues: Queue<SyncJobData, SyncJobResult>[];
  private readonly events: QueueEvents[];
  private readonly connection: IORedis;
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly options: SyncClientOptions,
    private readonly logger: Logger,
  ) {
    this.connection = new IORedis(redisOptions(options.redisUrl, 'producer'));
    this.connection.on('error', (err) => logger.warn({ err: err.message }, 'redis producer connection error'));
    this.queues = syncQueueNames(options.shards).map(
      (name) => new Queue<SyncJobData, SyncJobResult>(name, { connection: this.connection, prefix: options.prefix }),
    );
    this.events = syncQueueNames(options.shards).map((name) => {
      const events = new QueueEvents(name, {
        connection: redisOptions(options.redisUrl, 'blocking'),
        prefix: options.prefix,
      });
      events.on('completed', ({ jobId, returnvalue }) => this.settle(jobId, (p) => p.resolve(parseResult(returnvalue))));
      events.on('failed', ({ jobId, failedReason }) =>
        this.settle(jobId, (p) => p.reject(unavailable(`the batch could not be applied: ${failedReason}`, 2))),
      );
      events.on('error', (err) => logger.warn({ err: err.message }, 'redis events connection error'));
      return events;
    });
  }

  /** Resolves once every event stream is being read, so no result can be missed. */
  async ready(): Promise<void> {
    await Promise.all(this.events.map((e) => e.waitUntilReady()));
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

  /** Enqueues a batch on its device's shard and waits for the worker's result, at most `timeoutMs`. */
  async submit(data: SyncJobData): Promise<SyncJobResult> {
    if (!this.redisReady) throw unavailable('the sync queue is unavailable', 2);
    const queue = this.queues[shardOf(data.deviceId, this.options.shards)]!;
    const jobId = newId();
    const result = new Promise<SyncJobResult>((resolve, reject) => this.pending.set(jobId, { resolve, reject }));
    result.catch(() => undefined);
    try {
      await queue.add(SYNC_JOB_NAME, data, { ...SYNC_JOB_OPTIONS, jobId });
    } catch (err) {
      this.pending.delete(jobId);
      this.logger.warn({ err: (err as Error).message }, 'could not enqueue a sync batch');
      throw unavailable('the sync queue is unavailable', 2);
    }
    const timer = setTimeout(() => void this.expire(queue, jobId), this.options.timeoutMs);
    try {
      return await result;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * No result in time. A batch still waiting is withdrawn, so it is not applied behind the client's
   * back; one that finished meanwhile is answered from Redis; otherwise the client retries later.
   */
  private async expire(queue: Queue<SyncJobData, SyncJobResult>, jobId: string): Promise<void> {
    if (!this.pending.has(jobId)) return;
    try {
      const job = await Job.fromId<SyncJobData, SyncJobResult>(queue, jobId);
      if (job?.finishedOn && job.returnvalue) {
        this.settle(jobId, (p) => p.resolve(parseResult(job.returnvalue)));
        return;
      }
      // remove() refuses a job a worker holds the lock of, so an active batch is left to finish.
      if (job && (await job.isWaiting())) await queue.remove(jobId);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, jobId }, 'could not withdraw an expired sync batch');
    }
    this.settle(jobId, (p) => p.reject(unavailable('no sync result in time, retry the batch', 5)));
  }

  private settle(jobId: string, action: (p: Pending) => void): void {
    const pending = this.pending.get(jobId);
    if (!pending) return;
    this.pending.delete(jobId);
    action(pending);
  }

  /** Closes the connections; when Redis is gone they are dropped rather than waited for. */
  async close(): Promise<void> {
    const graceful = Promise.all([...this.events.map((e) => e.close()), ...this.queues.map((q) => q.close())]);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise((resolve) => (timer = setTimeout(resolve, 2000)));
    await Promise.race([graceful.catch(() => undefined), deadline]);
    clearTimeout(timer);
    // QueueEvents.close() waits for a first connection that never comes while Redis is down; its
    // connection's own close(force) drops a connection still being set up, reconnect timer included.
    await Promise.allSettled(
      this.events.map((e) => (e as unknown as { connection: { close(force: boolean): Promise<void> } }).connection.close(true)),
    );
    this.connection.disconnect();
  }
}
