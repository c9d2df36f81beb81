import { newId } from '../../shared/ids';
import type { BenchContext } from './context';
import { login, provisionUsers, type BenchUser } from './http.client';
import { OpsGenerator } from './ops.generator';
import { figure, fmt, fmtRatio, msSince, now, summarize, type Figure, type LatencySummary, type ScenarioReport } from './stats';

/**
 * "Noisy neighbour": Bob's file list and 1-op sync, first calm, then while Alice floods the service
 * with writes that all wait for her own lock: her devices send 1000-op batches, loops delete and
 * restore her files, and more loops delete ids she does not have. The ceiling of each of Bob's
 * figures is the same figure measured calm in the same run; the goal is within 2x under the flood.
 */
const PASSWORD = 'bench-password-1';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface BobSamples {
  list: number[];
  sync: number[];
  errors: number;
}

export async function runNoisy(ctx: BenchContext): Promise<ScenarioReport> {
  const { client, profile, log } = ctx;
  const p = profile.noisy;
  log(`noisy-neighbour: provisioning Alice (${p.aliceDevices} devices) and Bob`);
  const [aliceFirst, bob] = await provisionUsers(client, ctx.adminToken, ['noisy-alice', 'noisy-bob']);
  const alice: BenchUser[] = [aliceFirst!];
  for (let i = 1; i < p.aliceDevices; i++) alice.push(await login(client, 'noisy-alice', PASSWORD));

  const post = (user: BenchUser, ops: string) =>
    client.request('POST', '/v1/sync/ops', { headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' }, body: `{"ops":${ops}}` });
  const call = (user: BenchUser, method: string, path: string) => client.request(method, path, { headers: { authorization: `Bearer ${user.token}` } });

  // Alice's files that her write loops delete and restore in turn; Bob's folder of files he lists.
  const aliceFiles = Array.from({ length: p.writeLoops * 10 }, () => newId());
  const createFiles = (ids: string[], tag: string) =>
    JSON.stringify(ids.map((id, i) => ({ opId: i + 1, type: 'create', resourceId: id, payload: { resourceType: 'file', name: `${tag}-${i}.txt`, size: 10 } })));
  const seeded = await post(alice[0]!, createFiles(aliceFiles, 'seed'));
  const bobSeed = await post(bob!, createFiles(Array.from({ length: 50 }, () => newId()), 'bob'));
  if (seeded.status !== 200 || bobSeed.status !== 200) throw new Error(`seeding failed: ${seeded.status} ${bobSeed.status}`);

  const bobOps = new OpsGenerator('bob', 7001);
  const bobLoops = async (durationMs: number): Promise<BobSamples> => {
    const samples: BobSamples = { list: [], sync: [], errors: 0 };
    const end = Date.now() + durationMs;
    await Promise.all([
      (async () => {
        while (Date.now() < end) {
          const t = now();
          const res = await call(bob!, 'GET', '/v1/files?limit=50').catch(() => ({ status: 0 }));
          samples.list.push(msSince(t));
          if (res.status !== 200) samples.errors++;
          await sleep(20);
        }
      })(),
      (async () => {
        while (Date.now() < end) {
          const t = now();
          const res = await post(bob!, bobOps.batch(1)).catch(() => ({ status: 0 }));
          samples.sync.push(msSince(t));
          if (res.status !== 200) samples.errors++;
          await sleep(20);
        }
      })(),
    ]);
    return samples;
  };

  log('noisy-neighbour: warm-up and calm');
  await bobLoops(1000);
  const calm = await bobLoops(p.durationMs);

  const statuses = new Map<string, number>();
  const count = (kind: string, status: number) => statuses.set(kind + ' ' + status, (statuses.get(kind + ' ' + status) ?? 0) + 1);
  const aliceOps = alice.map((_, i) => new OpsGenerator(`alice${i}`, 8000 + i));

  // Phase 1: one of Alice's writes holds her lock (here a transaction of the bench), and she keeps
  // many writes waiting for it: the case where her requests used to take every connection.
  log(`noisy-neighbour: Alice's lock held; ${aliceFiles.length} loops of deletes of her files, ${p.aliceDevices} devices syncing, ${p.missLoops} deletes of ids she does not have every second`);
  let holding = true;
  const trx = await ctx.stack.db.transaction();
  await trx('users').where({ id: aliceFirst!.userId }).forUpdate().first('id');
  const held = Promise.all([
    ...aliceFiles.map(async (id) => {
      while (holding) count('held: delete', (await call(alice[0]!, 'DELETE', `/v1/files/${id}`).catch(() => ({ status: 0 }))).status);
    }),
    ...alice.map(async (device, i) => {
      while (holding) count('held: sync', (await post(device, aliceOps[i]!.batch(1)).catch(() => ({ status: 0 }))).status);
    }),
    (async () => {
      while (holding) {
        const burst = Array.from({ length: p.missLoops }, () => call(alice[0]!, 'DELETE', `/v1/files/${newId()}`).catch(() => ({ status: 0 })));
        for (const res of await Promise.all(burst)) count('held: delete-missing', res.status);
        await sleep(1000);
      }
    })(),
  ]);
  await sleep(1000);
  const lockHeld = await bobLoops(p.durationMs);
  holding = false;
  await trx.rollback();
  await held;
  // Her files deleted while the lock was held come back, so the next phase finds them.
  for (const id of aliceFiles) await call(alice[0]!, 'POST', `/v1/trash/${id}/restore`);

  // Phase 2: API load only, as fast as Alice's clients go: 1000-op batches from her devices, loops
  // deleting and restoring her files, loops deleting ids she does not have.
  log(`noisy-neighbour: Alice floods (${p.aliceDevices} devices x ${p.batchOps} ops, ${p.writeLoops} delete/restore loops, ${p.missLoops} loops of deletes of ids she does not have)`);
  let flooding = true;
  const flood = Promise.all([
    ...alice.map(async (device, i) => {
      while (flooding) count('flood: sync', (await post(device, aliceOps[i]!.batch(p.batchOps)).catch(() => ({ status: 0 }))).status);
    }),
    ...Array.from({ length: p.writeLoops }, async (_, loop) => {
      const mine = aliceFiles.slice(loop * 10, loop * 10 + 10);
      for (let k = 0; flooding; k++) {
        const id = mine[k % mine.length]!;
        count('flood: delete', (await call(alice[0]!, 'DELETE', `/v1/files/${id}`).catch(() => ({ status: 0 }))).status);
        count('flood: restore', (await call(alice[0]!, 'POST', `/v1/trash/${id}/restore`).catch(() => ({ status: 0 }))).status);
      }
    }),
    ...Array.from({ length: p.missLoops }, async () => {
      while (flooding) count('flood: delete-missing', (await call(alice[0]!, 'DELETE', `/v1/files/${newId()}`).catch(() => ({ status: 0 }))).status);
    }),
  ]);
  await sleep(1000);
  const flooded = await bobLoops(p.durationMs);
  flooding = false;
  await flood;

  const figures: Figure[] = [];
  const rows: string[][] = [];
  const phases = { calm, lockHeld, flooded };
  const summary = Object.fromEntries(
    Object.entries(phases).map(([phase, samples]) => [phase, { list: summarize(samples.list), sync: summarize(samples.sync), errors: samples.errors }]),
  ) as Record<keyof typeof phases, { list: LatencySummary; sync: LatencySummary; errors: number }>;
  for (const [what, key] of [
    ["Bob's list (GET /v1/files)", 'list'],
    ["Bob's 1-op sync", 'sync'],
  ] as const) {
    for (const metric of ['p50', 'p99'] as const) {
      const calmValue = summary.calm[key][metric];
      const heldValue = summary.lockHeld[key][metric];
      const floodValue = summary.flooded[key][metric];
      figures.push(figure('noisy-neighbour', what, `${metric}, Alice's lock held`, 'ms', 'time', heldValue, [{ name: `${metric} calm`, value: calmValue }]));
      figures.push(figure('noisy-neighbour', what, `${metric}, Alice's API flood`, 'ms', 'time', floodValue, [{ name: `${metric} calm`, value: calmValue }]));
      rows.push([what, metric, fmt(calmValue), fmt(heldValue), fmtRatio(heldValue, calmValue, 'time'), fmt(floodValue), fmtRatio(floodValue, calmValue, 'time')]);
    }
  }
  const alicesAnswers = [...statuses.entries()].sort().map(([k, n]) => `${k}: ${n}`).join(', ');
  const n = (x: { list: LatencySummary; sync: LatencySummary }) => x.list.n + x.sync.n;
  return {
    name: 'noisy-neighbour',
    title: `Noisy neighbour: Bob calm, while Alice's lock is held, and while Alice floods the API (${p.durationMs / 1000} s each)`,
    headers: ['request', 'percentile', 'calm ms', 'lock held ms', 'held / calm', 'API flood ms', 'flood / calm'],
    rows,
    notes: [
      `Bob's requests: ${n(summary.calm)} calm, ${n(summary.lockHeld)} lock held, ${n(summary.flooded)} API flood; not answered 200: ${calm.errors}, ${lockHeld.errors}, ${flooded.errors}.`,
      `Alice's answers: ${alicesAnswers}.`,
      "Goal: under the flood within 2x of calm. Alice's flood, Bob, the service, MariaDB and the load generator share the same CPUs.",
    ],
    figures,
    details: { summary, alice: Object.fromEntries(statuses) },
  };
}
