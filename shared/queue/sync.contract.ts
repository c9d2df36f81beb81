import type { RedisOptions } from 'ioredis';
import type { JobsOptions } from 'bullmq';
import type { ErrorBody } from '../errors';
import { LosslessNumber, stringifyLossless } from '../json';
import type { OpEcho } from '../sync/ops';

/**
 * The contract between the gateway (producer) and the worker (consumer) of sync batches.
 *
 * A batch itself lives in MySQL (table sync_batches, the durable inbox): the gateway records it there
 * and then rings a worker through one BullMQ queue with a job that carries only ids. Whichever worker
 * takes a ring applies every pending batch of that device up to the rung one, in id order, under the
 * owner's and the batches' row locks, so order never depends on what Redis keeps.
 */
export const SYNC_QUEUE_NAME = 'sync';

export const SYNC_JOB_NAME = 'apply-batch';

/** What a ring carries. No token, no password, no ops: only ids. */
export interface SyncJobData {
  /** The sync_batches id, a decimal string. */
  batchId: string;
  deviceId: string;
  userId: string;
  requestId: string;
}

/** What a ring's job returns: the batches it applied (ids), possibly none when another ring did. */
export interface SyncRingResult {
  applied: string[];
}

/** One job id per batch: a second ring of a batch whose job is still queued or running is dropped. */
export function syncJobId(batchId: string): string {
  return `batch-${batchId}`;
}

/** The Redis channel on which workers announce finished batches to the waiting gateways. */
export function syncDoneChannel(prefix: string): string {
  return `${prefix}:sync:done`;
}

/**
 * A "batch finished" message. `result` is the JSON text of a done batch's result; without it the
 * gateway reads the batch's row (failed batches, or whenever in doubt).
 */
export interface SyncDoneMessage {
  id: string;
  result?: string;
}

export type OpOutcome = 'applied' | 'noop' | 'duplicate';

/**
 * The resource's rev right after the op (for a duplicate, its rev now); null when the op names no
 * resource or the resource does not exist for the caller. A client that records it recognises its
 * own change when the feed brings it back.
 */
export type ResultRev = number | null;

export interface AppliedOp extends OpEcho {
  outcome: OpOutcome;
  rev: ResultRev;
}

export interface FailedOp extends OpEcho {
  error: ErrorBody;
  /** The rev as of the failure, with the same rule as AppliedOp.rev. */
  rev: ResultRev;
}

export interface SyncJobResult {
  applied: AppliedOp[];
  failed: FailedOp | null;
}

/**
 * One attempt: a ring that fails leaves its batch pending (or failed, see the worker), and the
 * workers' sweeper rings pending batches again. A failed job is removed at once so that such a
 * re-ring, which reuses the job id, is not taken for a duplicate.
 */
export const SYNC_JOB_OPTIONS: JobsOptions = {
  attempts: 1,
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: true,
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
    // `?? null`: results stored before revisions were reported have none.
    applied: result.applied.map((a) => ({ ...echoJson(a), outcome: a.outcome, rev: a.rev ?? null })),
    failed: result.failed === null ? null : { ...echoJson(result.failed), rev: result.failed.rev ?? null, error: result.failed.error },
  });
}
