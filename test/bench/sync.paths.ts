import { randomBytes } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import IORedis from 'ioredis';
import type { Knex } from 'knex';
import { SyncClient } from '../../services/gateway/sync/sync.client';
import { createLogger } from '../../shared/logger';
import { redisOptions, syncQueueNames, type SyncJobData, type SyncJobResult } from '../../shared/queue/sync.contract';
import type { BenchUser } from './http.client';
import { REDIS_URL, SYNC_SHARDS } from './stack';
import { msSince, now, summarize, type LatencySummary } from './stats';

/** The three ways the sync bench pushes batches, and what it reads back about where their time went. */

export interface RunResult {
  ops: number;
  batches: number;
  elapsedMs: number;
  opsPerSec: number;
  latency: LatencySummary;
  errors: number;
}

/**
 * Runs `devices` closed loops at once, each sending its next batch when the previous one answered,
 * until `durationMs` has passed (every device sends at least one batch). Throughput counts the drain.
 */
export async function closedLoops(devices: number, batchSize: number, durationMs: number, send: (device: number) => Promise<boolean>): Promise<RunResult> {
  const latencies: number[] = [];
  let errors = 0;
  const start = now();
  const deadline = Date.now() + durationMs;
  await Promise.all(
    Array.from({ length: devices }, async (_, device) => {
      let sent = 0;
      while (sent === 0 || Date.now() < deadline) {
        const t = now();
        const ok = await send(device).catch(() => false);
        if (!ok) errors++;
        latencies.push(msSince(t));
        sent++;
      }
    }),
  );
  const elapsedMs = msSince(start);
  const ops = latencies.length * batchSize;
  return { ops, batches: latencies.length, elapsedMs, opsPerSec: ops / (elapsedMs / 1000), latency: summarize(latencies), errors };
}

/** The result the real worker would return for a batch of `size` ops: same shape and size. */
function resultTemplate(size: number): SyncJobResult {
  return {
    applied: Array.from({ length: size }, (_, i) => ({
      opId: { raw: String(1_000_000 + i), kind: 'number' as const },
      type: 'create',
      resourceId: randomBytes(16).toString('hex'),
      outcome: 'applied' as const,
    })),
    failed: null,
  };
}

/**
 * Ceiling 1: a bare BullMQ round trip. The gateway's own SyncClient enqueues on the shard queue and
 * awaits the result through QueueEvents; workers set up exactly as the service's (one per shard,
 * global concurrency 1) run a processor that returns a ready-made result of the real size at once.
 */
export class BareQueue {
  private client!: SyncClient;
  private workers: Worker<SyncJobData, SyncJobResult>[] = [];
  private readonly templates = new Map<number, SyncJobResult>();
  current = 1;

  constructor(private readonly prefix: string) {}

  async start(): Promise<void> {
    const logger = createLogger('bench', 'silent');
    this.client = new SyncClient({ redisUrl: REDIS_URL, prefix: this.prefix, shards: SYNC_SHARDS, timeoutMs: 120_000 }, logger);
    const connection = redisOptions(REDIS_URL, 'blocking');
    for (const name of syncQueueNames(SYNC_SHARDS)) {
      const queue = new Queue(name, { connection, prefix: this.prefix });
      await queue.setGlobalConcurrency(1);
      await queue.close();
      this.workers.push(
        new Worker<SyncJobData, SyncJobResult>(name, async () => this.template(this.current), { connection, prefix: this.prefix, concurrency: 1 }),
      );
    }
    await Promise.all([this.client.ready(), ...this.workers.map((w) => w.waitUntilReady())]);
  }

  private template(size: number): SyncJobResult {
    let t = this.templates.get(size);
    if (!t) this.templates.set(size, (t = resultTemplate(size)));
    return t;
  }

  async submit(user: BenchUser, opsJson: string): Promise<boolean> {
    const result = await this.client.submit({ requestId: 'bench', userId: user.userId, deviceId: user.deviceId, opsJson, acceptedAt: Date.now() });
    return result.failed === null;
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.workers.map((w) => w.close()));
    await this.client.close();
  }
}

/**
 * One batch at a time per shard, devices assigned to shards as the service assigns them: the
 * concurrency the worker's queues allow (global concurrency 1 per shard), without the queue.
 */
export class ShardGate {
  private readonly tails = new Map<number, Promise<unknown>>();

  run<T>(shard: number, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(shard) ?? Promise.resolve();
    const result = previous.then(task, task);
    this.tails.set(shard, result.catch(() => undefined));
    return result;
  }
}

export interface Timeline {
  requestId: string;
  clientStart: number;
  clientEnd: number;
}

/** Where the service path's time went, per batch, joining the client's clock with the job's own timestamps. */
export async function jobBreakdown(prefix: string, timelines: Map<string, Timeline>): Promise<Record<string, number> | undefined> {
  const connection = new IORedis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const parts = { httpIn: 0, enqueue: 0, queueWait: 0, apply: 0, resultOut: 0, total: 0 };
  let n = 0;
  try {
    for (const name of syncQueueNames(SYNC_SHARDS)) {
      const queue = new Queue<SyncJobData, SyncJobResult>(name, { connection, prefix });
      const jobs = (await queue.getJobs(['completed'], 0, -1)) as Job<SyncJobData, SyncJobResult>[];
      await queue.close();
      for (const job of jobs) {
        const t = timelines.get(job.data.requestId);
        if (!t || !job.processedOn || !job.finishedOn) continue;
        parts.httpIn += job.data.acceptedAt - t.clientStart;
        parts.enqueue += job.timestamp - job.data.acceptedAt;
        parts.queueWait += job.processedOn - job.timestamp;
        parts.apply += job.finishedOn - job.processedOn;
        parts.resultOut += t.clientEnd - job.finishedOn;
        parts.total += t.clientEnd - t.clientStart;
        n++;
      }
    }
  } finally {
    connection.disconnect();
  }
  if (n === 0) return undefined;
  return Object.fromEntries([...Object.entries(parts).map(([k, v]) => [k, v / n]), ['jobs', n]]);
}

/** Counts the statements the worker's own code sends per batch, by kind. */
export function queryCounter(db: Knex) {
  const counts = new Map<string, number>();
  const listener = (q: { sql?: string }) => {
    const verb = (q.sql ?? '').trim().split(/\s+/)[0]?.toUpperCase().replace(/;$/, '') ?? '?';
    counts.set(verb, (counts.get(verb) ?? 0) + 1);
  };
  db.on('query', listener);
  return {
    reset: () => counts.clear(),
    snapshot: () => Object.fromEntries(counts),
    stop: () => db.off('query', listener),
  };
}
