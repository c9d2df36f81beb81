import type { Queue } from 'bullmq';
import type { Db } from '../../shared/db/knex';
import { InboxRepository } from '../../shared/db/repositories/inbox.repository';
import type { Logger } from '../../shared/logger';
import { ringJob, type RingJobData, type RingResult } from '../../shared/queue/ring.contract';

export interface SweeperOptions {
  /** How often to look for pending batches. */
  intervalMs: number;
  /** A batch pending longer than this is rung again. */
  staleMs: number;
  /** Finished batches are deleted this long after they were accepted. */
  retentionMs: number;
}

const BATCH = 200;
const PRUNE_EVERY_MS = 60_000;

/**
 * Rings pending batches again, so that a ring lost with Redis (restart without persistence, a job
 * removed by hand, a ring that failed) still gets its batch applied. A timer rather than a repeatable
 * job, because it must work after Redis lost everything; one indexed query per interval. The re-ring
 * reuses the batch's job id, so a ring still queued or running is not doubled.
 */
export class InboxSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private lastPrune = 0;

  constructor(
    private readonly db: Db,
    private readonly queue: Queue<RingJobData, RingResult>,
    private readonly options: SweeperOptions,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sweep(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One pass; returns how many batches it rang again. */
  async sweep(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    try {
      const inbox = new InboxRepository(this.db);
      const now = Date.now();
      const stale = await inbox.stalePending(new Date(now - this.options.staleMs), BATCH);
      if (stale.length > 0) {
        await this.queue.addBulk(
          stale.map((b) => ringJob({ batchId: b.id, deviceId: b.deviceId, userId: b.userId, requestId: b.requestId })),
        );
        this.logger.debug({ batches: stale.length }, 'pending sync batches rung again');
      }
      if (now - this.lastPrune > PRUNE_EVERY_MS) {
        this.lastPrune = now;
        const pruned = await inbox.prune(new Date(now - this.options.retentionMs), 5000);
        if (pruned > 0) this.logger.info({ pruned }, 'finished sync batches pruned');
      }
      return stale.length;
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'sync inbox sweep failed');
      return 0;
    } finally {
      this.running = false;
    }
  }
}
