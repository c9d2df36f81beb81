import type { Worker } from 'bullmq';
import { Counter, Histogram, type Registry } from 'prom-client';
import { batchOutcomeOf, createMetricsRegistry, DURATION_BUCKETS, type BatchOutcome } from '../../shared/metrics';
import { SYNC_QUEUE_NAME, type RingJobData, type RingResult } from '../../shared/queue/ring.contract';
import type { BatchResult } from '../../shared/sync/batch.result';

const OP_TYPES = new Set(['create', 'update', 'move', 'delete', 'share', 'share_link']);

/** A malformed op may carry any "type"; only the known ones become label values. */
const typeLabel = (type: string | null) => (type !== null && OP_TYPES.has(type) ? type : 'invalid');

/**
 * The worker's metrics. Batches are recorded by the inbox applier as they commit (one ring may apply
 * several batches of a device); the apply time is the batch's own time inside the transaction.
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
      help: 'Sync batches applied by this worker, by queue and outcome (ok, op_failed; error counts failed rings)',
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

  /** The observer the inbox applier calls for every batch it commits. */
  readonly recordApplied = (result: BatchResult, ms: number): void => {
    this.recordBatch(batchOutcomeOf(result), ms);
    for (const op of result.applied) this.opsApplied.inc({ type: typeLabel(op.type), outcome: op.outcome });
    if (result.failed) this.opsFailed.inc({ type: typeLabel(result.failed.type), code: result.failed.error.code });
  };

  /** Counts rings that failed (their batches stay pending or were failed), from the workers' events. */
  observe(workers: Worker<RingJobData, RingResult>[]): void {
    for (const worker of workers) {
      worker.on('failed', (job) => {
        if (job?.processedOn) this.recordBatch('error', Math.max(0, (job.finishedOn ?? Date.now()) - job.processedOn));
      });
    }
  }

  private recordBatch(outcome: BatchOutcome, ms: number): void {
    this.batchDuration.observe({ queue: SYNC_QUEUE_NAME, outcome }, ms / 1000);
  }
}
