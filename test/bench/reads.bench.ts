import autocannon from 'autocannon';
import { ListingRepository } from '../../shared/db/repositories/listing.repository';
import { createDb } from '../../shared/db/knex';
import type { BenchContext } from './context';
import { COMMON_TERM, RARE_MATCHES, RARE_TERM, readDataset } from './dataset';
import { provisionUsers } from './http.client';
import { figure, fmt, fmtRatio, msSince, now, summarize, type Figure, type ScenarioReport } from './stats';

export interface CannonResult {
  reqPerSec: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** "duration": as many requests as fit in the time; "amount": one per connection, all waited for. */
  mode: 'duration' | 'amount';
  singleRequestMs: number;
}

/**
 * autocannon against one URL; req/s counts 2xx answers over the whole run. A request so slow that
 * `connections` of them at once would not finish within the duration is measured instead as one
 * request per connection, all awaited: otherwise autocannon drops them at the end and reports nothing.
 */
export async function cannon(url: string, token: string | undefined, connections: number, durationS: number): Promise<CannonResult> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const t = now();
  await fetch(url, { headers }).then((r) => r.arrayBuffer());
  const singleRequestMs = msSince(t);
  const slow = singleRequestMs * connections > durationS * 1000;
  const result = await autocannon({
    url,
    connections,
    headers,
    timeout: 120,
    ...(slow ? { amount: connections } : { duration: durationS }),
  });
  return {
    reqPerSec: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    mode: slow ? 'amount' : 'duration',
    singleRequestMs,
  };
}

/**
 * The same repository call the route makes, straight on MySQL from this process: `connections` loops
 * for `durationS`, through a pool as large as the gateway's (20). What the reads cost without HTTP,
 * JSON and auth.
 */
export async function repositoryAlone(url: string, connections: number, durationS: number, call: (repo: ListingRepository) => Promise<unknown>) {
  const db = createDb(url, { max: 20 });
  const repo = new ListingRepository(db);
  try {
    await Promise.all(Array.from({ length: 20 }, () => call(repo)));
    const latencies: number[] = [];
    const start = now();
    const deadline = Date.now() + durationS * 1000;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (Date.now() < deadline) {
          const t = now();
          await call(repo);
          latencies.push(msSince(t));
        }
      }),
    );
    const elapsed = msSince(start) / 1000;
    return { reqPerSec: latencies.length / elapsed, ...summarize(latencies) };
  } finally {
    await db.destroy();
  }
}

/** EXPLAIN of every statement a call sends, to show which index each read uses and how many rows it reads. */
async function explain(db: BenchContext['stack']['db'], call: (repo: ListingRepository) => Promise<unknown>) {
  const statements: Array<{ sql: string; bindings: unknown[] }> = [];
  const listener = (q: { sql: string; bindings?: unknown[] }) => statements.push({ sql: q.sql, bindings: q.bindings ?? [] });
  db.on('query', listener);
  try {
    await call(new ListingRepository(db));
  } finally {
    db.off('query', listener);
  }
  const plans = [];
  for (const s of statements) {
    const [rows] = (await db.raw(`EXPLAIN ${s.sql}`, s.bindings as never)) as [Array<Record<string, unknown>>];
    plans.push({ sql: s.sql, plan: rows.map((r) => ({ key: r.key, rows: r.rows, Extra: r.Extra })) });
  }
  return plans;
}

interface ReadCase {
  label: string;
  path: string;
  call: (repo: ListingRepository, userId: string) => Promise<unknown>;
}

function readCases(): ReadCase[] {
  const page = { limit: 50, offset: 0, descending: true };
  return [
    { label: 'list sort=size', path: '/v1/files?sort=size', call: (r, u) => r.listFiles(u, null, { ...page, sort: 'size_bytes' }) },
    { label: 'list sort=created_at', path: '/v1/files?sort=created_at', call: (r, u) => r.listFiles(u, null, { ...page, sort: 'created_at' }) },
    { label: 'list sort=updated_at', path: '/v1/files?sort=updated_at', call: (r, u) => r.listFiles(u, null, { ...page, sort: 'updated_at' }) },
    {
      label: 'list sort=created_at offset=5000',
      path: '/v1/files?sort=created_at&offset=5000',
      call: (r, u) => r.listFiles(u, null, { ...page, offset: 5000, sort: 'created_at' }),
    },
    { label: `search q=${COMMON_TERM} (5%)`, path: `/v1/files/search?q=${COMMON_TERM}`, call: (r, u) => r.searchFiles(u, COMMON_TERM, 50, 0) },
    { label: `search q=${RARE_TERM} (${RARE_MATCHES} hits)`, path: `/v1/files/search?q=${RARE_TERM}`, call: (r, u) => r.searchFiles(u, RARE_TERM, 50, 0) },
  ];
}

export async function runReads(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, profile, log } = ctx;
  const { connections, durationS } = profile.reads;
  const figures: Figure[] = [];
  const rows: string[][] = [];
  const details: Record<string, unknown> = {};
  let slowCases = 0;

  // Ceiling: GET /healthz of the real gateway — same process, same middleware in front (metrics timer,
  // pino-http with its request id), no token check and no database.
  await cannon(`${stack.baseUrl}/healthz`, undefined, connections, 1);
  const ceiling = await cannon(`${stack.baseUrl}/healthz`, undefined, connections, durationS);
  log(`reads: /healthz ${fmt(ceiling.reqPerSec)} req/s`);
  // A reference point between the two: token check (one indexed join) plus one indexed query returning nothing.
  const [empty] = await provisionUsers(ctx.client, ctx.adminToken, ['reads-empty']);
  const authFloor = await cannon(`${stack.baseUrl}/v1/folders`, empty!.token, connections, durationS);
  rows.push(['-', 'GET /healthz (ceiling)', fmt(ceiling.reqPerSec), `${fmt(ceiling.p50)} / ${fmt(ceiling.p99)}`, '100%', '', '']);
  rows.push(['-', 'GET /v1/folders, none (auth + 1 query)', fmt(authFloor.reqPerSec), `${fmt(authFloor.p50)} / ${fmt(authFloor.p99)}`, fmtRatio(authFloor.reqPerSec, ceiling.reqPerSec, 'rate'), '', '']);
  figures.push(figure('reads', 'GET /v1/folders (auth + 1 indexed query, empty)', 'throughput', 'req/s', 'rate', authFloor.reqPerSec, [{ name: 'GET /healthz', value: ceiling.reqPerSec }]));
  details.healthz = ceiling;
  details.authFloor = authFloor;

  for (const files of profile.reads.sizes) {
    const data = await readDataset(ctx, files);
    for (const c of readCases()) {
      const kase = `${files} files: ${c.label}`;
      const svc = await cannon(`${stack.baseUrl}${c.path}`, data.user.token, connections, durationS);
      const repo = await repositoryAlone(stack.databaseUrl, connections, Math.max(1, durationS / 2), (r) => c.call(r, data.user.userId));
      if (svc.mode === 'amount') slowCases++;
      if (svc.non2xx + svc.errors > 0) log(`reads: ${kase}: ${svc.non2xx} non-2xx, ${svc.errors} errors`);
      log(`reads: ${kase}: ${fmt(svc.reqPerSec)} req/s (repository alone ${fmt(repo.reqPerSec)})`);
      figures.push(
        figure('reads', kase, 'throughput', 'req/s', 'rate', svc.reqPerSec, [
          { name: 'GET /healthz', value: ceiling.reqPerSec },
          { name: 'repository alone, no HTTP', value: repo.reqPerSec },
        ]),
        figure('reads', kase, 'latency p50', 'ms', 'time', svc.p50, [{ name: 'GET /healthz', value: ceiling.p50 }, { name: 'repository alone, no HTTP', value: repo.p50 }]),
        figure('reads', kase, 'latency p99', 'ms', 'time', svc.p99, [{ name: 'GET /healthz', value: ceiling.p99 }, { name: 'repository alone, no HTTP', value: repo.p99 }]),
      );
      rows.push([
        String(files),
        svc.mode === 'amount' ? `${c.label} *` : c.label,
        fmt(svc.reqPerSec),
        `${fmt(svc.p50)} / ${fmt(svc.p99)}`,
        fmtRatio(svc.reqPerSec, ceiling.reqPerSec, 'rate'),
        fmt(repo.reqPerSec),
        fmtRatio(svc.reqPerSec, repo.reqPerSec, 'rate'),
      ]);
      details[kase] = { service: svc, repositoryAlone: repo, explain: await explain(stack.db, (r) => c.call(r, data.user.userId)) };
    }
  }
  return {
    name: 'reads',
    title: `Reads: autocannon, ${connections} connections, ${durationS} s each (req/s; latency p50 / p99 in ms)`,
    headers: ['files', 'request', 'service req/s', 'p50 / p99', 'of /healthz', 'repository alone req/s', 'of repository'],
    rows,
    notes: [
      'Ceiling: GET /healthz of the real gateway, chosen over a separate bare Express app because it adds nothing to the product and passes the same process and middleware (metrics timer, pino-http with request id) without token check or database.',
      `"repository alone": the route's own ListingRepository call, ${connections} loops for ${Math.max(1, durationS / 2)} s straight on MySQL from the bench process through a 20-connection pool like the gateway's — the database's share, without HTTP, auth and JSON.`,
      ...(slowCases > 0
        ? [`Rows marked *: a single request took so long that ${connections} at once could not finish in ${durationS} s, so they were measured as ${connections} simultaneous requests, all awaited.`]
        : []),
      'Each user\'s files are at the root (the listed folder), plus 5% soft-deleted files and one folder per 100 files; four other users hold as many rows again.',
    ],
    figures,
    details,
  };
}
