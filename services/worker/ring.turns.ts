import { DelayedError, type Job } from 'bullmq';
import { UserSlots } from '../../shared/fairness/user.slots';
import type { RingJobData } from '../../shared/queue/ring.contract';

/** How long a ring put aside for its user's turn waits at most before it is tried again. */
export const DEFERRED_RING_MS = 500;

/**
 * Turns of the users in one worker process. A ring waits for its user's row lock holding one of the
 * process's SYNC_CONCURRENCY places and one connection, so one user's rings alone could take them all,
 * each waiting for the one before it, while other users' rings queue. Here a user has at most
 * `perUser` rings in progress (one applying, one ready to take the lock at the commit); a further
 * ring of that user is put back in the queue as a delayed job, which frees its place at once, and is
 * promoted again when one of the user's rings ends (or after DEFERRED_RING_MS, when the ring that ends
 * runs in another process).
 *
 * Nothing of the inbox changes: which batches a ring applies, and in which order, is still decided in
 * MySQL under the owner's and the batches' row locks (inbox.applier.ts), so putting a ring back
 * reorders only doorbells. The delayed job keeps its id (`batch-<id>`), so a sweeper's re-ring is
 * still taken for a duplicate, and it lives in Redis, so a worker that dies loses nothing.
 */
export class RingTurns {
  private readonly slots: UserSlots;
  /** Rings of each user put aside by this process, oldest first, by job id. */
  private readonly deferred = new Map<string, Map<string, Job<RingJobData>>>();

  constructor(perUser: number, private readonly deferMs = DEFERRED_RING_MS) {
    this.slots = new UserSlots(perUser);
  }

  /** Wraps a ring processor: the ring runs when its user has a turn free, else goes back to the queue. */
  wrap<R>(process: (job: Job<RingJobData, R>) => Promise<R>): (job: Job<RingJobData, R>, token?: string) => Promise<R> {
    return async (job, token) => {
      const { userId } = job.data;
      if (!this.slots.tryTake(userId)) {
        await job.moveToDelayed(Date.now() + this.deferMs, token);
        this.remember(userId, job as Job<RingJobData>);
        // BullMQ's signal that the job was moved, not failed: it is neither counted nor removed.
        throw new DelayedError();
      }
      this.forget(userId, job.id);
      try {
        return await process(job);
      } finally {
        this.slots.release(userId);
        void this.promoteNext(userId);
      }
    };
  }

  private remember(userId: string, job: Job<RingJobData>): void {
    const jobs = this.deferred.get(userId) ?? new Map<string, Job<RingJobData>>();
    const id = job.id ?? '';
    jobs.delete(id);
    jobs.set(id, job);
    this.deferred.set(userId, jobs);
  }

  private forget(userId: string, id: string | undefined): void {
    const jobs = this.deferred.get(userId);
    if (!jobs || id === undefined) return;
    jobs.delete(id);
    if (jobs.size === 0) this.deferred.delete(userId);
  }

  /** Brings the user's oldest ring put aside back to the queue; one already back (or gone) is skipped. */
  private async promoteNext(userId: string): Promise<void> {
    const jobs = this.deferred.get(userId);
    while (jobs && jobs.size > 0) {
      const [id, job] = jobs.entries().next().value as [string, Job<RingJobData>];
      jobs.delete(id);
      if (jobs.size === 0) this.deferred.delete(userId);
      try {
        await job.promote();
        return;
      } catch {
        // Its delay ran out, another worker took it, or Redis is away: the queue brings it back anyway.
      }
    }
  }
}
