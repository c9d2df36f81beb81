import { randomBytes } from 'node:crypto';
import type { BenchContext } from './context';
import { freePort, gatewayReady } from './stack';
import { HttpClient, provisionUsers, type BenchUser } from './http.client';
import { figure, fmt, fmtRatio, msSince, now, summarize, type Figure, type ScenarioReport } from './stats';

const BOUNDARY = 'quotabenchboundary';
const CONNECTIONS = 8;

/** A multipart body of one file part, as POST /files takes it. */
function multipartOf(bytes: Buffer, name: string): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    bytes,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
}

/** Uploads of `size` bytes at CONNECTIONS at once for `ms`; uploads per second. */
async function uploadRate(client: HttpClient, user: BenchUser, size: number, ms: number): Promise<number> {
  const payload = randomBytes(size);
  const headers = { authorization: `Bearer ${user.token}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
  const end = Date.now() + ms;
  let done = 0;
  const t = now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, c) => {
      for (let i = 0; Date.now() < end; i++) {
        const res = await client.request('POST', '/v1/files', { headers, body: multipartOf(payload, `q-${c}-${i}-${randomBytes(4).toString('hex')}.bin`) });
        if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.body.toString('utf8').slice(0, 200)}`);
        done++;
      }
    }),
  );
  return done / (msSince(t) / 1000);
}

/** Sequential PUTs of `size` bytes over `files` in turn, `reps` times; milliseconds each. */
async function putTimes(client: HttpClient, user: BenchUser, files: string[], size: number, reps: number): Promise<number[]> {
  const body = randomBytes(size);
  const headers = { authorization: `Bearer ${user.token}`, 'content-type': 'application/octet-stream' };
  const ms: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = now();
    const res = await client.request('PUT', `/v1/files/${files[i % files.length]}/content`, { headers, body });
    ms.push(msSince(t));
    if (res.status !== 200) throw new Error(`PUT failed: ${res.status} ${res.body.toString('utf8').slice(0, 200)}`);
  }
  return ms;
}

/** A second gateway on the same database and store, with other settings; stopped by the returned function. */
async function extraGateway(ctx: BenchContext, env: Record<string, string>): Promise<{ client: HttpClient; stop: () => Promise<void> }> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const proc = await ctx.stack.launch('gateway', 'gateway2', { PORT: String(port), ...env }, () => gatewayReady(baseUrl));
  return { client: new HttpClient(baseUrl), stop: async () => void (await proc.stop('SIGTERM')) };
}

/**
 * Issue 20's goals, each against its ceiling in the same run: 1 KiB uploads at 8 connections by a
 * user with a quota against one without (alternating rounds); GET /users/me/usage at 100,000 files;
 * PUT of 1 MiB with versions kept against a gateway with MAX_VERSIONS=0 (rounds alternating).
 */
export async function runQuota(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, log } = ctx;
  const quick = ctx.profile.name === 'quick';
  const [limited, free, many, putter] = (await provisionUsers(client, ctx.adminToken, ['quota-set', 'quota-none', 'quota-many', 'quota-put'])) as BenchUser[] as [
    BenchUser,
    BenchUser,
    BenchUser,
    BenchUser,
  ];
  await stack.db('users').where({ id: limited.userId }).update({ quota_bytes: 1024 ** 4 });
  const figures: Figure[] = [];
  const rows: string[][] = [];

  // 1. Uploads with a quota against none.
  const roundMs = quick ? 1500 : 4000;
  const withQuota: number[] = [];
  const without: number[] = [];
  await uploadRate(client, free, 1024, 500);
  for (let round = 0; round < (quick ? 2 : 4); round++) {
    without.push(await uploadRate(client, free, 1024, roundMs));
    withQuota.push(await uploadRate(client, limited, 1024, roundMs));
  }
  const best = (xs: number[]) => Math.max(...xs);
  const median = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  };
  log(`quota uploads: with ${withQuota.map((x) => fmt(x)).join(', ')} / without ${without.map((x) => fmt(x)).join(', ')} per s`);
  figures.push(figure('quota', '1 KiB uploads, 8 connections', 'uploads/s with a quota', '/s', 'rate', best(withQuota), [{ name: 'no quota', value: best(without) }]));
  rows.push(['1 KiB uploads at 8 connections (best round)', `${fmt(best(withQuota))}/s with a quota`, `${fmt(best(without))}/s without`, fmtRatio(best(withQuota), best(without), 'rate'), '≥ 0.95']);
  // On a loaded machine single rounds swing widely: the median of the rounds is the steadier figure.
  rows.push(['1 KiB uploads at 8 connections (median round)', `${fmt(median(withQuota))}/s with a quota`, `${fmt(median(without))}/s without`, fmtRatio(median(withQuota), median(without), 'rate'), '≥ 0.95']);

  // 2. Usage at 100,000 files: one primary-key read whatever the user stores.
  const files = quick ? 20_000 : 100_000;
  log(`seeding ${files} files for the usage read`);
  await stack.db.raw(
    `INSERT INTO resources (id, user_id, parent_id, type, name, size_bytes, storage_key, content_sha256, created_at, updated_at, change_seq)
     SELECT LOWER(HEX(RANDOM_BYTES(16))), ?, NULL, 'file', CONCAT('seed-', a.n, '-', b.n, '-', c.n), 1000, CONCAT('seed/', a.n, '-', b.n, '-', c.n), REPEAT('0', 64), NOW(3), NOW(3), 0
     FROM search_positions a CROSS JOIN search_positions b CROSS JOIN (SELECT n FROM search_positions WHERE n <= ?) c
     WHERE a.n <= 100 AND b.n <= 100`,
    [many.userId, Math.ceil(files / 10_000)],
  );
  await stack.db.raw(
    `UPDATE users SET files_bytes = (SELECT SUM(size_bytes) FROM resources WHERE user_id = ? AND alive = 1 AND storage_key IS NOT NULL) WHERE id = ?`,
    [many.userId, many.userId],
  );
  const auth = { authorization: `Bearer ${many.token}` };
  const usageMs: number[] = [];
  const healthMs: number[] = [];
  for (let i = -20; i < (quick ? 200 : 1000); i++) {
    let t = now();
    const res = await client.request('GET', '/v1/users/me/usage', { headers: auth });
    if (i >= 0) usageMs.push(msSince(t));
    if (res.status !== 200) throw new Error(`usage failed: ${res.status}`);
    t = now();
    await client.request('GET', '/healthz');
    if (i >= 0) healthMs.push(msSince(t));
  }
  const usage = summarize(usageMs);
  const floor = summarize(healthMs);
  const stored = JSON.parse((await client.request('GET', '/v1/users/me/usage', { headers: auth })).body.toString('utf8')) as { filesBytes: number };
  figures.push(figure('quota', `usage at ${files} files`, 'GET /users/me/usage p50', 'ms', 'time', usage.p50, [{ name: 'GET /healthz p50', value: floor.p50 }]));
  rows.push([`GET /users/me/usage at ${files} files (${stored.filesBytes} bytes)`, `p50 ${fmt(usage.p50, 2)} ms, p99 ${fmt(usage.p99, 2)} ms`, `/healthz p50 ${fmt(floor.p50, 2)} ms`, fmtRatio(usage.p50, floor.p50, 'time'), '< 2 ms']);

  // 3. PUT 1 MiB with versions kept against a gateway that keeps none.
  const off = await extraGateway(ctx, { MAX_VERSIONS: '0' });
  try {
    const targets: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await client.request('POST', '/v1/files', {
        headers: { authorization: `Bearer ${putter.token}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
        body: multipartOf(randomBytes(1024), `put-${i}.bin`),
      });
      targets.push((JSON.parse(res.body.toString('utf8')) as { id: string }).id);
    }
    const reps = quick ? 10 : 30;
    const on: number[] = [];
    const none: number[] = [];
    await putTimes(client, putter, targets, 1024 * 1024, 3);
    await putTimes(off.client, putter, targets, 1024 * 1024, 3);
    for (let round = 0; round < 3; round++) {
      none.push(...(await putTimes(off.client, putter, targets, 1024 * 1024, reps)));
      on.push(...(await putTimes(client, putter, targets, 1024 * 1024, reps)));
    }
    const rateOf = (ms: number[]) => 1000 / summarize(ms).p50;
    figures.push(figure('quota', 'PUT 1 MiB', 'replacements/s with versions', '/s', 'rate', rateOf(on), [{ name: 'MAX_VERSIONS=0', value: rateOf(none) }]));
    rows.push(['PUT 1 MiB replacement (p50)', `${fmt(summarize(on).p50, 2)} ms with versions`, `${fmt(summarize(none).p50, 2)} ms with MAX_VERSIONS=0`, fmtRatio(rateOf(on), rateOf(none), 'rate'), '≥ 0.9']);
  } finally {
    await off.stop();
  }

  return {
    name: 'quota',
    title: 'Quotas and versions (issue 20): each beside its ceiling in the same run',
    headers: ['case', 'service', 'ceiling', 'ratio', 'goal'],
    rows,
    notes: [
      'Uploads: rounds alternate between the user without a quota and the one with a 1 TiB quota; the best round of each.',
      'Usage: seeded rows, counters set once; the read is one primary-key read of the user row, whatever the number of files.',
      'PUT: a second gateway on the same database with MAX_VERSIONS=0 (the replaced content leaves the store at once); rounds alternate; the rate is 1 / p50.',
    ],
    figures,
    details: {},
  };
}
