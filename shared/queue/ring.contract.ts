import type { JobsOptions } from 'bullmq';

/**
 * The contract between the gateway (producer) and the worker (consumer) of sync batches.
 *
 * A batch itself lives in MySQL (table sync_batches, the durable inbox): the gateway records it there
 * and then rings a worker through one BullMQ queue with a job that carries only ids. Whichever worker
 * takes a ring applies every pending batch of that device up to the rung one, in id order, under the
 * owner's and the batches' row locks, so order never depends on what Redis keeps.
 */
export const SYNC_QUEUE_NAME = 'sync';

const RING_JOB_NAME = 'apply-batch';

/** What a ring carries. No token, no password, no ops: only ids. */
export interface RingJobData {
  /** The sync_batches id, a decimal string. */
  batchId: string;
  deviceId: string;
  userId: string;
  requestId: string;
}

/** What a ring's job returns: the batches it applied (ids), possibly none when another ring did. */
export interface RingResult {
  applied: string[];
}

/** A ring as BullMQ's `add` and `addBulk` take it. */
export interface RingJob {
  name: string;
  data: RingJobData;
  opts: JobsOptions;
}

/**
 * The ring of one batch, whoever sends it (the gateway on accept, the sweeper on a lost ring).
 *
 * One job id per batch: a second ring of a batch whose job is still queued or running is dropped.
 * The id names the device as well as the batch: batch ids start again from 1 in a new database,
 * and a finished ring an earlier database left under the same prefix (kept an hour) would
 * otherwise swallow the new batch's ring. Device ids are random, so they never meet.
 * One attempt: a ring that fails leaves its batch pending (or failed, see the worker), and the
 * workers' sweeper rings pending batches again. A failed job is removed at once so that such a
 * re-ring, which reuses the job id, is not taken for a duplicate.
 */
export function ringJob(data: RingJobData): RingJob {
  return {
    name: RING_JOB_NAME,
    data,
    opts: {
      jobId: `batch-${data.deviceId}-${data.batchId}`,
      attempts: 1,
      removeOnComplete: { age: 3600, count: 1000 },
      removeOnFail: true,
    },
  };
}

/** The Redis channel on which workers announce finished batches to the waiting gateways. */
export function batchDoneChannel(prefix: string): string {
  return `${prefix}:sync:done`;
}

/**
 * A "batch finished" message. `result` is the JSON text of a done batch's result; without it the
 * gateway reads the batch's row (failed batches, or whenever in doubt).
 */
export interface BatchDoneMessage {
  id: string;
  result?: string;
}
