import type { JobsOptions } from 'bullmq';

/**
 * The scheduled removal of expired resumable uploads: a BullMQ job scheduler on its own small queue.
 * The worker service upserts the scheduler at start-up (idempotent: every worker upserts the same
 * id, so there is one schedule however many workers run) and processes its jobs; the gateway only
 * shows the queue in the dashboard.
 */
export const UPLOAD_EXPIRY_QUEUE = 'upload-expiry';
export const UPLOAD_EXPIRY_SCHEDULER_ID = 'remove-expired-uploads';
export const UPLOAD_EXPIRY_JOB_NAME = 'remove-expired-uploads';

/** No data: the job reads everything it needs from the upload folder. */
export type UploadExpiryJobData = Record<string, never>;

export interface UploadExpiryJobResult {
  removed: number;
}

/** A few runs are kept for the dashboard; a failed run is simply tried again at the next tick. */
export const UPLOAD_EXPIRY_JOB_OPTIONS: JobsOptions = {
  attempts: 1,
  removeOnComplete: { count: 50 },
  removeOnFail: { count: 50 },
};

/**
 * How often the sweep runs: a quarter of the expiry period, between 1 second and 15 minutes, so an
 * expired upload's bytes are gone at most that long after it expired.
 */
export function uploadExpirySweepMs(expiryMs: number): number {
  return Math.min(15 * 60_000, Math.max(1000, Math.floor(expiryMs / 4)));
}
