import { Queue, type JobsOptions } from 'bullmq';
import { bullPrefix, closingWith, connectRedis, type RedisTarget } from '../redis/redis.connection';

/**
 * The maintenance queue: housekeeping run by the workers on a schedule (BullMQ job schedulers), one
 * job name per task. Jobs carry no data worth keeping secret, or any data at all: each run reads
 * what is due from MySQL, so a lost or repeated run changes nothing but timing.
 */
export const MAINTENANCE_QUEUE = 'maintenance';

/** Job names, also the ids of their schedulers. */
export const PURGE_TRASH_JOB = 'purge-trash';
export const EXPIRE_UPLOADS_JOB = 'expire-uploads';
export const EXPIRE_VERSIONS_JOB = 'expire-versions';
export const SWEEP_THUMBNAILS_JOB = 'sweep-thumbnails';
export const SWEEP_CRC32S_JOB = 'sweep-crc32s';

export type MaintenanceJobName = typeof PURGE_TRASH_JOB | typeof EXPIRE_UPLOADS_JOB | typeof EXPIRE_VERSIONS_JOB | typeof SWEEP_THUMBNAILS_JOB | typeof SWEEP_CRC32S_JOB;

/** How often thumbnails of content that is gone are removed (they take no one's quota meanwhile). */
export const THUMBNAIL_SWEEP_MS = 15 * 60_000;

/** How often recorded CRC-32s of content that is gone are dropped (a row of 36 bytes each). */
export const CRC32_SWEEP_MS = 60 * 60_000;

/** Empty: a run needs nothing but the configuration of the worker that takes it. */
export type MaintenanceJobData = Record<string, never>;

export interface MaintenanceJobResult {
  /** What the run did, shown in the dashboard (for the trash: resources purged, files removed). */
  [counter: string]: number;
}

/** A failed run is not retried: the next scheduled one starts over from what MySQL says is due. */
export const MAINTENANCE_JOB_OPTIONS: Omit<JobsOptions, 'jobId' | 'repeat' | 'delay'> = {
  attempts: 1,
  removeOnComplete: { age: 24 * 3600, count: 100 },
  removeOnFail: { age: 7 * 24 * 3600, count: 100 },
};

/** How often the trash purge runs: a small share of the retention, between a second and an hour. */
export function purgeIntervalMs(retentionMs: number): number {
  return Math.min(3600_000, Math.max(1000, Math.round(retentionMs / 24)));
}

/**
 * How often expired resumable uploads are removed: a quarter of the expiry period, between a second
 * and 15 minutes, so their bytes are gone at most that long after they expired.
 */
export function uploadExpirySweepMs(expiryMs: number): number {
  return Math.min(15 * 60_000, Math.max(1000, Math.floor(expiryMs / 4)));
}

/**
 * A producer-side handle on the queue, for the dashboard. Its connection is the queue's own: closing
 * the queue closes it.
 */
export function openMaintenanceQueue(redis: RedisTarget, prefix: string): Queue<MaintenanceJobData, MaintenanceJobResult> {
  const connection = connectRedis(redis, 'producer');
  return closingWith(new Queue<MaintenanceJobData, MaintenanceJobResult>(MAINTENANCE_QUEUE, { connection, prefix: bullPrefix(redis, prefix) }), connection);
}
