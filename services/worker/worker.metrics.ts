import type { Worker } from 'bullmq';
import { Counter, Histogram, type Registry } from 'prom-client';
import { batchOutcomeOf, createMetricsRegistry, DURATION_BUCKETS, type BatchOutcome } from '../../shared/metrics';
import type { SyncJobData, SyncJobResult } from '../../shared/queue/sync.contract';

const OP_TYPES = new Set(['create', 'update', 'move', 'delete', 'share', 'share_link']);

/** A malformed op may carry any "type"; only the known ones become label values. */
const typeLabel = (type: string | null) => (type !== null && OP_TYPES.has(type) ? type : 'invalid');

/**
 * The worker's metrics, read from the BullMQ workers' own events so the processor stays about
 * applying batches. The apply time is the job's time in the active state: from the moment this
 * worker took it (`processedOn`) to its result being stored (`finishedOn`).
 */
export class WorkerMetrics {
  readonly registry: Registry;
  private readonly batchDuration: Histogram<'queue' | 'outcome'>;
  private readonly opsApplied: Counter<'type' | 'outcome'>;
  private readonly opsFailed: Counter<'type' | 'code'>;

  constructor(registry: Registry = createMetricsRegistry('worker')) {
    this.registry = registry;
    this.batchDuration = new Histogram({
      name: 'filesync_sync_batch_duration_seconds',
      help: 'Sync batches applied by this worker, by shard queue and outcome (ok, op_failed, error)',
      labelNames: ['queue', 'outcome'],
      buckets: DURATION_BUCKETS,
      registers: [registry],
    });
    this.opsApplied = new Counter({
      name: 'filesync_sync_ops_applied_total',
      help: 'Sync ops reported in `applied`, by op type and outcome (applied, noop, duplicate)',
      labelNames: ['type', 'outcome'],
      registers: [registry],
    });
    this.opsFailed = new Counter({
      name: 'filesync_sync_ops_failed_total',
      help: 'Sync ops reported in `failed` (the op that stopped its batch), by op type and error code',
      labelNames: ['type', 'code'],
      registers: [registry],
    });
  }

  /** Starts observing the given workers' completed and failed jobs. */
  observe(workers: Worker<SyncJobData, SyncJobResult>[]): void {
    for (const worker of workers) {
      worker.on('completed', (job, result) => {
        this.recordBatch(worker.name, batchOutcomeOf(result), job.processedOn, job.finishedOn);
        for (const op of result.applied) this.opsApplied.inc({ type: typeLabel(op.type), outcome: op.outcome });
        if (result.failed) this.opsFailed.inc({ type: typeLabel(result.failed.type), code: result.failed.error.code });
      });
      worker.on('failed', (job) => this.recordBatch(worker.name, 'error', job?.processedOn, job?.finishedOn));
    }
  }

  private recordBatch(queue: string, outcome: BatchOutcome, processedOn: number | undefined, finishedOn: number | undefined): void {
    if (!processedOn) return;
    this.batchDuration.observe({ queue, outcome }, Math.max(0, (finishedOn ?? Date.now()) - processedOn) / 1000);
  }
}
