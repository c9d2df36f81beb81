import IORedis from 'ioredis';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { InboxRepository } from '../../shared/db/repositories/inbox.repository';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { withoutTag } from '../../shared/db/statement.tags';
import { createLogger } from '../../shared/logger';
import { redisOptions } from '../../shared/redis/redis.connection';
import { InboxApplier } from '../../services/worker/inbox.applier';
import type { BenchUser } from './http.client';
import type { OpsGenerator } from './ops.generator';
import type { BenchStack } from './stack';
import { REDIS_URL } from './stack';
import { msSince, now, summarize, type LatencySummary } from './stats';

/** What one side sends MySQL for one batch: statements per batch (each is one round trip) and one batch's list. */
export interface SideStatements {
  perBatch: number;
  byVerb: Record<string, number>;
  /** The statements of the last batch, shortened: what a reader checks the count against. */
  sample: string[];
}

export interface BatchStatements {
  gateway: SideStatements;
  worker: SideStatements;
  batches: number;
  /** InboxApplier.ring in this process, 1-op batches one after another: the worker's code without its process. */
  ringMs: LatencySummary;
  /** InboxRepository.accept in this process. */
  acceptMs: LatencySummary;
}

/** Records every statement a pool sends (knex 'query' events; BEGIN and COMMIT included). */
function recorder(db: Knex) {
  let sqls: string[] = [];
  const listener = (q: { sql?: string }) => sqls.push((q.sql ?? '').trim());
  db.on('query', listener);
  return {
    take: () => {
      const out = sqls;
      sqls = [];
      return out;
    },
    stop: () => db.off('query', listener),
  };
}

function side(sqls: string[], batches: number, sample: string[]): SideStatements {
  const byVerb: Record<string, number> = {};
  for (const sql of sqls) {
    const verb = withoutTag(sql).split(/\s+/)[0]!.toUpperCase().replace(/;$/, '');
    byVerb[verb] = (byVerb[verb] ?? 0) + 1 / batches;
  }
  return { perBatch: sqls.length / batches, byVerb, sample: sample.map((s) => s.replace(/\s+/g, ' ').slice(0, 90)) };
}

/**
 * Runs the gateway's statement for a batch (InboxRepository.accept, what BatchSubmitter.submit calls,
 * which also checks the token's user and device) and the
 * real ring (InboxApplier.ring, what the worker runs per job) in this process for `batches` 1-op
 * batches of one device, counting each side's statements. The Redis side is fixed by the code: the
 * gateway sends one command per batch (the job's add script) and receives one message; the worker
 * runs BullMQ's take and finish scripts and publishes the result and a change notification.
 */
export async function countBatchStatements(stack: BenchStack, user: BenchUser, ops: OpsGenerator, batches = 50): Promise<BatchStatements> {
  const publisher = new IORedis(redisOptions(REDIS_URL, 'producer'));
  const prefix = `${stack.queuePrefix}_probe`;
  const applier = new InboxApplier(
    stack.db,
    new OwnerTransactions(stack.db),
    publisher,
    { databaseUrl: stack.databaseUrl, queuePrefix: prefix, deadlineMs: 60_000, slowLogMs: 60_000 },
    createLogger('bench', 'silent'),
  );
  const log = createLogger('bench', 'silent');
  const inbox = new InboxRepository(stack.db);
  const rec = recorder(stack.db);
  const gatewaySql: string[] = [];
  const workerSql: string[] = [];
  let lastGateway: string[] = [];
  let lastWorker: string[] = [];
  const acceptTimes: number[] = [];
  const ringTimes: number[] = [];
  try {
    for (let i = 0; i < batches; i++) {
      rec.take();
      const requestId = randomBytes(12).toString('hex');
      // The gateway's own statements for POST /v1/sync/ops: the accept, which also checks the token's user and device.
      const t0 = now();
      const batchId = await inbox.accept({ deviceId: user.deviceId, userId: user.userId, requestId, ops: ops.batch(1), createdAt: new Date() });
      if (batchId === undefined) throw new Error('probe device has no principal');
      acceptTimes.push(msSince(t0));
      gatewaySql.push(...(lastGateway = rec.take()));
      const t1 = now();
      const ring = await applier.ring({ batchId, deviceId: user.deviceId, userId: user.userId, requestId }, log);
      ringTimes.push(msSince(t1));
      workerSql.push(...(lastWorker = rec.take()));
      if (ring.applied.length !== 1) throw new Error(`probe batch ${batchId} was not applied`);
      const [row] = await new InboxRepository(stack.db).finished([batchId]);
      const result = JSON.parse(row?.result ?? '{}') as { applied?: { outcome: string }[] };
      if (result.applied?.[0]?.outcome !== 'applied') throw new Error(`probe batch ${batchId}: ${row?.result}`);
    }
  } finally {
    rec.stop();
    publisher.disconnect();
  }
  return {
    gateway: side(gatewaySql, batches, lastGateway),
    worker: side(workerSql, batches, lastWorker),
    batches,
    ringMs: summarize(ringTimes),
    acceptMs: summarize(acceptTimes),
  };
}
