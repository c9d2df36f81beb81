import { randomBytes } from 'node:crypto';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { BatchApplier } from '../../services/worker/batch.applier';
import type { BenchContext } from './context';
import { provisionUsers } from './http.client';
import { OpsGenerator } from './ops.generator';
import { DEFAULT_SYNC_TIMEOUT_MS, SYNC_TIMEOUT_MS } from './stack';
import { figure, fmt, fmtRatio, msSince, now, summarize, type Figure, type ScenarioReport } from './stats';
import { BareQueue, closedLoops, jobBreakdown, queryCounter, type RunResult, type Timeline } from './sync.paths';
import { countBatchStatements } from './sync.statements';

export async function runSync(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const maxDevices = Math.max(...profile.sync.devices);
  log(`sync: provisioning ${maxDevices} users with a device each`);
  const users = await provisionUsers(
    client,
    ctx.adminToken,
    Array.from({ length: maxDevices }, (_, i) => `sync-${i}`),
  );
  // Separate outboxes per path, so every path applies fresh ops; the direct path uses device ids of its own.
  const viaService = users.map((_, i) => new OpsGenerator(`s${i}`, 1000 + i));
  const viaQueue = users.map((_, i) => new OpsGenerator(`q${i}`, 2000 + i));
  const viaApplier = users.map((_, i) => new OpsGenerator(`a${i}`, 3000 + i));
  const directDevices = users.map(() => randomBytes(16).toString('hex'));
  const applier = new BatchApplier(new OwnerTransactions(stack.db));
  const bare = new BareQueue(`${stack.queuePrefix}_ceil`);
  await bare.start();

  const timelines = new Map<string, Timeline>();
  let nonApplied = 0;
  const service = async (device: number, size: number): Promise<boolean> => {
    const user = users[device]!;
    const requestId = randomBytes(12).toString('hex');
    const body = `{"ops":${viaService[device]!.batch(size)}}`;
    const clientStart = Date.now();
    const res = await client.request('POST', '/v1/sync/ops', {
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json', 'x-request-id': requestId },
      body,
    });
    timelines.set(requestId, { requestId, clientStart, clientEnd: Date.now() });
    if (res.status !== 200) return false;
    const result = JSON.parse(res.body.toString('utf8')) as { applied: Array<{ outcome: string }>; failed: unknown };
    nonApplied += result.applied.filter((a) => a.outcome !== 'applied').length;
    return result.failed === null && result.applied.length === size;
  };
  const direct = async (device: number, size: number): Promise<boolean> => {
    const opsJson = viaApplier[device]!.batch(size);
    const result = await applier.apply({ userId: users[device]!.userId, deviceId: directDevices[device]!, opsJson });
    nonApplied += result.applied.filter((a) => a.outcome !== 'applied').length;
    return result.failed === null;
  };
  const queued = (device: number, size: number) => bare.submit(users[device]!, viaQueue[device]!.batch(size));

  const counter = queryCounter(stack.db);
  const figures: Figure[] = [];
  const rows: string[][] = [];
  const breakdownRows: string[][] = [];
  const cells: Record<string, unknown>[] = [];
  const errors = { service: 0, queue: 0, direct: 0 };
  try {
    // Warm-up: connections, pools and JIT on every path, with every device.
    log('sync: warm-up');
    bare.current = 10;
    await closedLoops(maxDevices, 10, 0, (d) => queued(d, 10));
    await closedLoops(maxDevices, 10, 0, (d) => direct(d, 10));
    await closedLoops(maxDevices, 10, 0, (d) => service(d, 10));
    timelines.clear();

    for (const devices of profile.sync.devices) {
      for (const size of profile.sync.batchSizes) {
        const kase = `${devices} device${devices > 1 ? 's' : ''} x ${size} op${size > 1 ? 's' : ''}`;
        const duration = profile.sync.durationMs;
        bare.current = size;
        const q = await closedLoops(devices, size, duration, (d) => queued(d, size));
        counter.reset();
        const a = await closedLoops(devices, size, duration, (d) => direct(d, size));
        const queries = counter.snapshot();
        timelines.clear();
        const s = await closedLoops(devices, size, duration, (d) => service(d, size));
        const breakdown = await jobBreakdown(stack.queuePrefix, stack.db, timelines);
        log(`sync: ${kase}: service ${fmt(s.opsPerSec)} ops/s, BullMQ no-op ${fmt(q.opsPerSec)}, direct ${fmt(a.opsPerSec)}`);

        const ceilings = (pick: (r: RunResult) => number) => [
          { name: 'bare BullMQ round trip', value: pick(q) },
          { name: 'BatchApplier direct', value: pick(a) },
        ];
        // Issue 11 item 4's goal: a batch's latency against the two floors it cannot avoid, added.
        const floorSum = (pick: (r: RunResult) => number) => [...ceilings(pick), { name: 'BullMQ round trip + direct apply', value: pick(q) + pick(a) }];
        figures.push(
          figure('sync', kase, 'throughput', 'ops/s', 'rate', s.opsPerSec, ceilings((r) => r.opsPerSec)),
          figure('sync', kase, 'batch latency p50', 'ms', 'time', s.latency.p50, floorSum((r) => r.latency.p50)),
          figure('sync', kase, 'batch latency p99', 'ms', 'time', s.latency.p99, floorSum((r) => r.latency.p99)),
        );
        rows.push([
          String(devices),
          String(size),
          fmt(s.opsPerSec),
          `${fmt(s.latency.p50)} / ${fmt(s.latency.p99)}`,
          fmt(q.opsPerSec),
          `${fmt(q.latency.p50)} / ${fmt(q.latency.p99)}`,
          fmtRatio(s.opsPerSec, q.opsPerSec, 'rate'),
          fmt(a.opsPerSec),
          `${fmt(a.latency.p50)} / ${fmt(a.latency.p99)}`,
          fmtRatio(s.opsPerSec, a.opsPerSec, 'rate'),
          `${fmt(s.latency.p50 / (q.latency.p50 + a.latency.p50), 2)}x`,
        ]);
        const queryTotal = Object.values(queries).reduce((x, y) => x + y, 0);
        if (breakdown) {
          breakdownRows.push([
            String(devices),
            String(size),
            fmt(breakdown.httpIn!),
            fmt(breakdown.ring!),
            fmt(breakdown.queueWait!),
            fmt(breakdown.apply!),
            fmt(breakdown.resultOut!),
            fmt(breakdown.total!),
            fmt(queryTotal / a.batches, 1),
          ]);
        }
        cells.push({
          case: kase,
          devices,
          batchSize: size,
          service: s,
          bareQueue: q,
          direct: a,
          serviceBreakdownMeanMs: breakdown,
          directQueriesPerBatch: Object.fromEntries(Object.entries(queries).map(([k, v]) => [k, v / a.batches])),
        });
        errors.service += s.errors;
        errors.queue += q.errors;
        errors.direct += a.errors;
        if (s.errors + q.errors + a.errors > 0) log(`sync: ${kase}: errors service=${s.errors} queue=${q.errors} direct=${a.errors}`);
      }
    }
  } finally {
    counter.stop();
    await bare.stop();
  }

  // Statements per 1-op batch on each side, counted on the real accept and ring code.
  // A user and device of their own: their opIds must be new to the device, as a client's are.
  const [probeUser] = await provisionUsers(client, ctx.adminToken, ['sync-probe']);
  const statements = await countBatchStatements(stack, probeUser!, new OpsGenerator('p0', 4000));
  log(`sync: statements per 1-op batch: gateway ${fmt(statements.gateway.perBatch, 1)}, worker ${fmt(statements.worker.perBatch, 1)}`);

  // The floor of one statement: a SELECT 1 round trip through knex and mysql2, from this process.
  const pings: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = now();
    await stack.db.raw('SELECT 1');
    pings.push(msSince(t));
  }
  const ping = summarize(pings);
  const perStatement = cells
    .filter((c) => c.devices === 1)
    .map((c) => {
      const direct = c.direct as RunResult;
      const statements = Object.values(c.directQueriesPerBatch as Record<string, number>).reduce((x, y) => x + y, 0);
      return `${c.batchSize} op${(c.batchSize as number) > 1 ? 's' : ''}: ${fmt(direct.latency.p50 / statements, 2)} ms`;
    });
  const overDefaultTimeout = cells
    .filter((c) => (c.service as RunResult).latency.max > DEFAULT_SYNC_TIMEOUT_MS)
    .map((c) => `${c.case} (max ${fmt((c.service as RunResult).latency.max / 1000)} s)`);
  const mix = viaService.reduce(
    (m, g) => ({ create: m.create + g.mix.create, update: m.update + g.mix.update, move: m.move + g.mix.move, delete: m.delete + g.mix.delete }),
    { create: 0, update: 0, move: 0, delete: 0 },
  );
  return {
    name: 'sync',
    title: 'Sync throughput: POST /v1/sync/ops (ops/s; batch latency p50 / p99 in ms)',
    headers: ['devices', 'ops/batch', 'service ops/s', 'service p50 / p99', 'BullMQ no-op ops/s', 'BullMQ p50 / p99', 'of BullMQ', 'direct ops/s', 'direct p50 / p99', 'of direct', 'p50 / (BullMQ + direct p50)'],
    rows,
    notes: [
      'BullMQ no-op: a queue of its own carries the same batch to a worker of the service\'s concurrency (8) and awaits the result via QueueEvents; the processor returns a ready result of the real size. No MySQL.',
      'direct: BatchApplier.apply (the worker\'s code) on the same ops mix in the bench process, pool of 8 like the worker, each device one batch at a time (what the inbox allows), no HTTP, no inbox and no queue.',
      `SYNC_TIMEOUT_MS is ${SYNC_TIMEOUT_MS / 1000} s for the bench (default ${DEFAULT_SYNC_TIMEOUT_MS / 1000} s). Cells where some batch took longer than the default, and would have been answered 503 in production: ${overDefaultTimeout.length > 0 ? overDefaultTimeout.join('; ') : 'none'}.`,
      `One statement's floor: SELECT 1 through knex from the bench process, p50 ${fmt(ping.p50, 2)} ms. The worker's own statements, one device (direct p50 / statements per batch): ${perStatement.join(', ')}.`,
      `SQL statements per 1-op batch (each one MySQL round trip; InboxRepository.accept and InboxApplier.ring run in the bench process on one device, ${statements.batches} batches): gateway ${fmt(statements.gateway.perBatch, 1)} (${verbs(statements.gateway.byVerb)}), worker ${fmt(statements.worker.perBatch, 1)} (${verbs(statements.worker.byVerb)}), total ${fmt(statements.gateway.perBatch + statements.worker.perBatch, 1)}. Redis per batch, from the code: gateway 1 command (the job's add script) and 1 message received; worker BullMQ's take and finish scripts, 1 PUBLISH of the result, 1 PUBLISH of the change. The gateway reads MySQL for a result only when no message came within a second. Timed in the bench process on those batches: accept p50 ${fmt(statements.acceptMs.p50, 2)} ms, InboxApplier.ring (lock, apply, mark done, commit, publish) p50 ${fmt(statements.ringMs.p50, 2)} ms.`,
      `Ops mix sent through the service: ${mix.create} creates, ${mix.update} renames, ${mix.move} moves, ${mix.delete} deletes; outcomes other than "applied" (all paths): ${nonApplied}; failed batches or errors: service ${errors.service}, BullMQ ${errors.queue}, direct ${errors.direct}.`,
    ],
    figures,
    extraTables: [
      {
        title: 'Where a service batch spends its time (mean ms per batch, client clock joined with the batch row and its ring\'s job on X-Request-Id; SQL statements counted on the direct run)',
        headers: ['devices', 'ops/batch', 'HTTP in+auth+parse+record', 'ring', 'queue wait', 'apply (worker)', 'result to client', 'total', 'SQL statements/batch'],
        rows: breakdownRows,
      },
    ],
    details: {
      statementsPerBatch: statements,
      cells,
      mix,
      nonApplied,
      errors,
      selectOneRoundTrip: ping,
    },
  };
}

function verbs(byVerb: Record<string, number>): string {
  return Object.entries(byVerb)
    .map(([verb, n]) => `${fmt(n, 1)} ${verb}`)
    .join(', ');
}
