import { createHash } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import { bullPrefix, closingWith, connectRedis, type RedisTarget } from '../redis/redis.connection';

/**
 * The chunk-list queue: one job per large content committed by a whole upload (multipart, PUT, tus,
 * WebDAV), made by the workers, never in the upload's request. The job cuts the content under
 * `storageKey` (shared/protocol/chunking.ts) and keeps its list, so that the first
 * `GET /files/:id/chunks` of that content, and the first delta against it, find the list made.
 * Delta uploads keep the list they checked and enqueue nothing.
 */
export const CHUNK_LIST_QUEUE = 'chunk-lists';
export const MAKE_CHUNK_LIST_JOB = 'make-chunk-list';

export interface ChunkListJobData {
  storageKey: string;
  sha256: string;
}

export interface ChunkListJobResult {
  /** 1 when the list was made, 0 when it was kept already, cut elsewhere or the content was gone. */
  made: number;
  chunks: number;
  gone: number;
  /** 1 when a gateway was cutting it already (shared/chunks/list.claims.ts): its list is left to it. */
  elsewhere: number;
}

/** Derived from the key (BullMQ refuses ':' in custom ids): enqueueing one content twice adds nothing while its job waits. */
export const chunkListJobId = (storageKey: string): string => `chunks-${createHash('sha256').update(storageKey).digest('hex')}`;

/** A failure to read the store is retried with backoff; a content gone meanwhile completes with `gone`. */
export const CHUNK_LIST_JOB_OPTIONS: Omit<JobsOptions, 'jobId'> = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 2000 },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600, count: 1000 },
};

/** A producer-side handle on the queue (enqueueing, the dashboard); closing it closes its connection. */
export function openChunkListQueue(redis: RedisTarget, prefix: string): Queue<ChunkListJobData, ChunkListJobResult> {
  const connection = connectRedis(redis, 'producer');
  return closingWith(new Queue<ChunkListJobData, ChunkListJobResult>(CHUNK_LIST_QUEUE, { connection, prefix: bullPrefix(redis, prefix) }), connection);
}
