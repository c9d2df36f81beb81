import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser } from './http.client';
import { figure, fmt, type Figure, type ScenarioReport } from './stats';
import { closedLoops } from './sync.paths';

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name; 100 ticks a second on Linux.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The pid of the first process whose command line matches (the shared MariaDB and Redis: read only). */
async function findPid(match: RegExp): Promise<number | undefined> {
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmd = await fs.readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (match.test(cmd.replace(/\0/g, ' '))) return Number(entry);
  }
  return undefined;
}

interface Sample {
  label: string;
  pids: number[];
}

async function cpuOf(samples: Sample[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    let total = 0;
    for (const pid of s.pids) total += await cpuSeconds(pid);
    out[s.label] = total;
  }
  out.bench = process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6;
  return out;
}

/**
 * Issue 11 item 5: sync throughput with 1, 2 and 4 worker processes (each of the service's
 * concurrency), 64 devices each keeping batches in flight through the gateway. Every batch creates
 * folders, so each op's feed position (the resource's change_seq, taken under the owner's lock) shows
 * the order batches applied in: per device it must rise with the batch id (acceptance order).
 */
export async function runSyncScale(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const p = profile.syncScale;
  const users = await provisionUsers(
    client,
    ctx.adminToken,
    Array.from({ length: p.devices }, (_, i) => `scale-${i}`),
  );
  const opSeq = users.map(() => 0);
  const send = async (user: BenchUser, device: number, size: number): Promise<boolean> => {
    const ops = Array.from({ length: size }, () => {
      const n = ++opSeq[device]!;
      return `{"opId":${n},"type":"create","resourceId":"${randomBytes(16).toString('hex')}","payload":{"resourceType":"folder","name":"f${n}"}}`;
    });
    const res = await client.request('POST', '/v1/sync/ops', {
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
      body: `{"ops":[${ops.join(',')}]}`,
    });
    return res.status === 200;
  };
  const mysqld = await findPid(/(mariadbd|mysqld)(\s|$)/);
  const redis = await findPid(/redis-server .*:6379/);
  const rows: string[][] = [];
  const figures: Figure[] = [];
  const details: Record<string, unknown>[] = [];
  let violations = 0;
  try {
    for (const size of p.batchSizes) {
      let base: number | undefined;
      for (const workers of p.workers) {
        while (stack.workerPids.length < workers) await stack.addWorker();
        const samples: Sample[] = [
          { label: 'gateway', pids: [stack.gatewayPid] },
          { label: 'workers', pids: stack.workerPids },
          ...(mysqld ? [{ label: 'mysqld (shared)', pids: [mysqld] }] : []),
          ...(redis ? [{ label: 'redis (shared)', pids: [redis] }] : []),
        ];
        const kase = `${workers} worker${workers > 1 ? 's' : ''}, ${p.devices} devices x ${p.inFlight} in flight x ${size} op${size > 1 ? 's' : ''}`;
        const load0 = os.loadavg()[0]!;
        const before = await cpuOf(samples);
        const run = await closedLoops(p.devices * p.inFlight, size, p.durationMs, (slot) => send(users[slot % p.devices]!, slot % p.devices, size));
        const after = await cpuOf(samples);
        const secs = run.elapsedMs / 1000;
        const cpu = Object.fromEntries(Object.keys(after).map((k) => [k, (after[k]! - before[k]!) / secs]));
        const bad = await orderViolations(ctx, users);
        violations += bad;
        base ??= run.opsPerSec;
        log(`sync-scale: ${kase}: ${fmt(run.opsPerSec)} ops/s, p50 ${fmt(run.latency.p50)} ms, order violations ${bad}, cores busy ${JSON.stringify(cpu)}`);
        figures.push(figure('sync-scale', kase, 'throughput', 'ops/s', 'rate', run.opsPerSec, [{ name: 'one worker process', value: base }]));
        rows.push([
          String(workers),
          String(size),
          fmt(run.opsPerSec),
          `${fmt(run.latency.p50)} / ${fmt(run.latency.p99)}`,
          `${fmt(run.opsPerSec / base, 2)}x`,
          ...['gateway', 'workers', 'mysqld (shared)', 'redis (shared)', 'bench'].map((k) => (cpu[k] === undefined ? 'n/a' : fmt(cpu[k], 2))),
          `${fmt(load0, 1)} -> ${fmt(os.loadavg()[0]!, 1)}`,
          String(bad),
          String(run.errors),
        ]);
        details.push({ workers, size, run, cpuCoresBusy: cpu, orderViolations: bad });
      }
    }
  } finally {
    await stack.stopExtraWorkers();
  }
  return {
    name: 'sync-scale',
    title: `Sync with more worker processes: POST /v1/sync/ops, ${p.devices} devices, ${p.inFlight} batches in flight each (ops/s; latency ms; CPU in cores busy)`,
    headers: ['workers', 'ops/batch', 'ops/s', 'p50 / p99', 'of 1 worker', 'gateway cores', 'workers cores', 'mysqld cores (shared)', 'redis cores (shared)', 'bench cores', 'load avg (1 min)', 'order violations', 'errors'],
    rows,
    notes: [
      `Each worker process has SYNC_CONCURRENCY rings at a time; all share one gateway, the bench client, MariaDB and Redis on ${os.cpus().length} cores.`,
      'Cores busy: CPU seconds (user + system from /proc/<pid>/stat) over the run\'s wall time. MariaDB and Redis are shared with anything else running on the machine, so their figures include other load.',
      'Order: every op creates a folder; per device, the folders\' change_seq (feed position, taken under the owner\'s lock when the op applied) must rise with the id of the batch (acceptance order). A violation is a batch that applied before an earlier-accepted one of its device.',
    ],
    figures,
    details: { runs: details, violations, mysqldPid: mysqld ?? null, redisPid: redis ?? null },
  };
}

/** Batches of these devices, by id, whose ops took feed positions below those of an earlier batch. */
async function orderViolations(ctx: BenchContext, users: BenchUser[]): Promise<number> {
  const db = ctx.stack.db;
  const seq = new Map<string, number>();
  const resources = await db('resources').whereIn('user_id', users.map((u) => u.userId)).select<{ id: string; change_seq: string | number }[]>('id', 'change_seq');
  for (const r of resources) seq.set(r.id, Number(r.change_seq));
  const batches = await db('sync_batches')
    .whereIn('device_id', users.map((u) => u.deviceId))
    .andWhere({ status: 'done' })
    .orderBy(['device_id', 'id'])
    .select<{ device_id: string; result: string }[]>('device_id', 'result');
  let bad = 0;
  let device = '';
  let hi = -1;
  for (const b of batches) {
    if (b.device_id !== device) {
      device = b.device_id;
      hi = -1;
    }
    const positions = (JSON.parse(b.result) as { applied: { resourceId?: string }[] }).applied.map((a) => seq.get(a.resourceId ?? '') ?? NaN);
    if (positions.some((x) => Number.isNaN(x) || x <= hi)) bad++;
    hi = Math.max(hi, ...positions.filter((x) => !Number.isNaN(x)));
  }
  return bad;
}
