import { createHash } from 'node:crypto';
import type { RedisOptions } from 'ioredis';
import type { JobsOptions } from 'bullmq';
import type { ErrorBody } from '../errors';
import { LosslessNumber, stringifyLossless } from '../json';
import type { OpEcho } from '../sync/ops';

/**
 * The contract between the gateway (producer) and the worker (consumer) of sync batches.
 *
 * Batches are spread over `shards` queues by a stable hash of the device id. Each queue has a global
 * concurrency of 1, so at most one batch per shard is active across all workers: batches of one device
 * run one at a time, in the order they were accepted.
 */
export const SYNC_QUEUE_PREFIX = 'sync';

export function syncQueueName(shard: number): string {
  return `${SYNC_QUEUE_PREFIX}-${shard}`;
}

export function syncQueueNames(shards: number): string[] {
  return Array.from({ length: shards }, (_, i) => syncQueueName(i));
}

/** The shard of a device. Changing the number of shards moves devices; drain the queues first. */
export function shardOf(deviceId: string, shards: number): number {
  return createHash('sha256').update(deviceId).digest().readUInt32BE(0) % shards;
}

export const SYNC_JOB_NAME = 'apply-batch';

/** What a job carries. No token, no password: only ids and the ops themselves. */
export interface SyncJobData {
  requestId: string;
  userId: string;
  deviceId: string;
  /** The `ops` array as JSON text, numbers exactly as the client wrote them. */
  opsJson: string;
  acceptedAt: number;
}

export type OpOutcome = 'applied' | 'noop' | 'duplicate';

export interface AppliedOp extends OpEcho {
  outcome: OpOutcome;
}

export interface FailedOp extends OpEcho {
  error: ErrorBody;
}

export interface SyncJobResult {
  applied: AppliedOp[];
  failed: FailedOp | null;
}

/** One attempt: a retried job would go to the back of its queue and overtake later batches. */
export const SYNC_JOB_OPTIONS: JobsOptions = {
  attempts: 1,
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600, count: 1000 },
};

export function redisOptions(url: string, role: 'producer' | 'blocking'): RedisOptions {
  const u = new URL(url);
  const db = u.pathname && u.pathname !== '/' ? Number(u.pathname.slice(1)) : 0;
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db: Number.isInteger(db) ? db : 0,
    tls: u.protocol === 'rediss:' ? {} : undefined,
    // Producers fail fast while Redis is down; blocking connections (workers, events) wait for it.
    maxRetriesPerRequest: role === 'producer' ? 1 : null,
    enableOfflineQueue: role !== 'producer',
    connectTimeout: 5000,
    retryStrategy: (times: number) => Math.min(times * 200, 2000),
  };
}

const echoJson = (e: OpEcho) => ({
  opId: e.opId === null ? null : e.opId.kind === 'number' ? new LosslessNumber(e.opId.raw) : e.opId.raw,
  type: e.type,
  resourceId: e.resourceId,
});

/** The HTTP response body of a batch, with every opId echoed exactly as it was sent. */
export function renderSyncResult(result: SyncJobResult): string {
  return stringifyLossless({
    applied: result.applied.map((a) => ({ ...echoJson(a), outcome: a.outcome })),
    failed: result.failed === null ? null : { ...echoJson(result.failed), error: result.failed.error },
  });
}
