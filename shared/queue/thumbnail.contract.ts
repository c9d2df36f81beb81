import { Queue, type JobsOptions } from 'bullmq';
import { bullPrefix, closingWith, connectRedis, type RedisTarget } from '../redis/redis.connection';

/**
 * The thumbnail queue: one job per image content (by SHA-256), made by the workers, never by the
 * gateway. The job reads the content under `storageKey` and stores the sizes of EAGER_THUMBNAIL_SIZES
 * (shared/thumbnails), or with `part: 'large'` those of LARGE_THUMBNAIL_SIZES, asked for by the
 * endpoint when first needed. Its id is derived from the digest and the part, so enqueueing the same
 * content twice (two uploads of one picture, the endpoint asking again) adds nothing while the first
 * job is waiting, running or failed; a completed job leaves the queue, so a later request can enqueue
 * it again.
 */
export const THUMBNAIL_QUEUE = 'thumbnails';
export const MAKE_THUMBNAILS_JOB = 'make-thumbnails';

export interface ThumbnailJobData {
  sha256: string;
  /** A content key holding those bytes when the job was enqueued. */
  storageKey: string;
  /** Absent: the sizes made with the upload; 'large': those made when first asked for. */
  part?: ThumbnailPart;
}

export type ThumbnailPart = 'large';

export interface ThumbnailJobResult {
  /** 1 when images were stored, 0 when they were there already or the content was gone or unreadable. */
  made: number;
  skipped: number;
  unreadable: number;
  gone: number;
}

/** BullMQ refuses ':' in custom ids; a digest is hex. */
export const thumbnailJobId = (sha256: string, part?: ThumbnailPart): string => (part ? `thumb-${part}-${sha256}` : `thumb-${sha256}`);

/**
 * A failure to read the store is retried with backoff; an image the library cannot decode fails at
 * once (UnrecoverableError) and is recorded as unreadable, so it is never tried again.
 */
export const THUMBNAIL_JOB_OPTIONS: Omit<JobsOptions, 'jobId'> = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 2000 },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600, count: 1000 },
};

/** A producer-side handle on the queue (enqueueing, the dashboard); closing it closes its connection. */
export function openThumbnailQueue(redis: RedisTarget, prefix: string): Queue<ThumbnailJobData, ThumbnailJobResult> {
  const connection = connectRedis(redis, 'producer');
  return closingWith(new Queue<ThumbnailJobData, ThumbnailJobResult>(THUMBNAIL_QUEUE, { connection, prefix: bullPrefix(redis, prefix) }), connection);
}
