import { randomBytes } from 'node:crypto';
import { Queue, QueueEvents, Worker, type Job } from 'bullmq';
import IORedis from 'ioredis';
import type { Knex } from 'knex';
import { withoutTag } from '../../shared/db/statement.tags';
import { SYNC_QUEUE_NAME, type RingJobData, type RingResult } from '../../shared/queue/ring.contract';
import { redisOptions } from '../../shared/redis/redis.connection';
import type { BatchResult } from '../../shared/sync/batch.result';
import type { BenchUser } from './http.client';
import { REDIS_URL, SYNC_CONCURRENCY } from './stack';
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
function resultTemplate(size: number): BatchResult {
  return {
    applied: Array.from({ length: size }, (_, i) => ({
      opId: { raw: String(1_000_000 + i), kind: 'number' as const },
      type: 'create',
      resourceId: randomBytes(16).toString('hex'),
      outcome: 'applied' as const,
      rev: 1,
    })),
    failed: null,
  };
}

/**
 * Ceiling 1: a bare BullMQ round trip. A queue of its own carries the batch to a worker with the
 * service's concurrency, whose processor returns a ready-made result of the real size at once; the
 * result comes back through QueueEvents. No MySQL on this path.
 */
export class BareQueue {
  private queue!: Queue<{ opsJson: string }, BatchResult>;
  private events!: QueueEvents;
  private worker!: Worker<{ opsJson: string }, BatchResult>;
  private producer!: IORedis;
  private readonly templates = new Map<number, BatchResult>();
  current = 1;

  constructor(private readonly prefix: string) {}

  async start(): Promise<void> {
    const connection = redisOptions(REDIS_URL, 'blocking');
    this.producer = new IORedis(redisOptions(REDIS_URL, 'producer'));
    this.queue = new Queue('bare', { connection: this.producer, prefix: this.prefix });
    this.events = new QueueEvents('bare', { connection, prefix: this.prefix });
    this.worker = new Worker('bare', async () => this.template(this.current), { connection, prefix: this.prefix, concurrency: SYNC_CONCURRENCY });
    // Every batch in flight waits on the events with listeners of its own (64 devices at once).
    this.events.setMaxListeners(0);
    this.queue.setMaxListeners(0);
    await Promise.all([this.events.waitUntilReady(), this.worker.waitUntilReady()]);
  }

  private template(size: number): BatchResult {
    let t = this.templates.get(size);
    if (!t) this.templates.set(size, (t = resultTemplate(size)));
    return t;
  }

  async submit(_user: BenchUser, opsJson: string): Promise<boolean> {
    const job = await this.queue.add('bare', { opsJson }, { removeOnComplete: { age: 600 } });
    const result = await job.waitUntilFinished(this.events, 120_000);
    return result.failed === null;
  }

  async stop(): Promise<void> {
    await Promise.allSettled([this.worker.close(), this.events.close(), this.queue.close()]);
    this.producer.disconnect();
  }
}

export interface Timeline {
  requestId: string;
  clientStart: number;
  clientEnd: number;
}

/**
 * Where the service path's time went, per batch, joining the client's clock with the batch's row
 * (accepted, finished) and its ring's job (queued, taken).
 */
export async function jobBreakdown(prefix: string, db: Knex, timelines: Map<string, Timeline>): Promise<Record<string, number> | undefined> {
  const connection = new IORedis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const parts = { httpIn: 0, ring: 0, queueWait: 0, apply: 0, resultOut: 0, total: 0 };
  let n = 0;
  try {
    const queue = new Queue<RingJobData, RingResult>(SYNC_QUEUE_NAME, { connection, prefix });
    const jobs = (await queue.getJobs(['completed'], 0, -1)) as Job<RingJobData, RingResult>[];
    await queue.close();
    const byBatch = new Map(jobs.map((j) => [j.data.batchId, j]));
    const ids = [...timelines.keys()];
    for (let i = 0; i < ids.length; i += 1000) {
      const rows = await db('sync_batches')
        .whereIn('request_id', ids.slice(i, i + 1000))
        .select<{ id: string; request_id: string; created_at: Date; finished_at: Date | null }[]>('id', 'request_id', 'created_at', 'finished_at');
      for (const row of rows) {
        const t = timelines.get(row.request_id);
        const job = byBatch.get(String(row.id));
        if (!t || !row.finished_at || !job?.processedOn) continue;
        const accepted = row.created_at.getTime();
        const finished = row.finished_at.getTime();
        parts.httpIn += accepted - t.clientStart;
        parts.ring += job.timestamp - accepted;
        parts.queueWait += job.processedOn - job.timestamp;
        parts.apply += finished - job.processedOn;
        parts.resultOut += t.clientEnd - finished;
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
    const verb = withoutTag(q.sql ?? '').trim().split(/\s+/)[0]?.toUpperCase().replace(/;$/, '') ?? '?';
    counts.set(verb, (counts.get(verb) ?? 0) + 1);
  };
  db.on('query', listener);
  return {
    reset: () => counts.clear(),
    snapshot: () => Object.fromEntries(counts),
    stop: () => db.off('query', listener),
  };
}
