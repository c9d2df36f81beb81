import { likeContains, ListingRepository } from '../../shared/db/repositories/listing.repository';
import { NAME_MATCHES } from '../../shared/db/derived/search-index.repository';
import type { BenchContext } from './context';
import { provisionUsers } from './http.client';
import { cannon, repositoryAlone } from './reads.bench';
import { COMMON_TERM, RARE_MATCHES, RARE_TERM, Seeder } from './seeder';
import { figure, fmt, fmtRatio, msSince, now, summarize, type Figure, type ScenarioReport } from './stats';

type Db = BenchContext['stack']['db'];

/** The search as it was before the index: a scan of the owner's names with the same LIKE, counted and paged. */
async function scanSearch(db: Db, userId: string, text: string): Promise<number> {
  const matching = () => db('resources').where({ user_id: userId, type: 'file', alive: 1 }).andWhereRaw(NAME_MATCHES, [likeContains(text)]);
  const [, count] = await Promise.all([matching().orderBy([{ column: 'name' }, { column: 'id' }]).limit(50).select('id'), matching().count({ n: '*' })]);
  return Number(count[0]!.n);
}

async function sequential(reps: number, call: () => Promise<unknown>) {
  const samples: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = now();
    await call();
    samples.push(msSince(t));
  }
  return summarize(samples);
}

/** Data and index bytes of the tables, as InnoDB reports them (pages allocated, so an upper bound). */
async function tableSizes(db: Db): Promise<Record<string, { rows: number; mib: number }>> {
  const [rows] = (await db.raw(
    `SELECT table_name AS t, table_rows AS r, data_length + index_length AS b FROM information_schema.tables
     WHERE table_schema = DATABASE() AND table_name IN ('resources', 'search_grams', 'folder_file_counts')`,
  )) as [Array<{ t: string; r: number; b: number }>];
  return Object.fromEntries(rows.map((r) => [r.t, { rows: Number(r.r), mib: Number(r.b) / 1024 / 1024 }]));
}

/**
 * `--only=search-1m`: search at a million files of one user and as many again of four others.
 * Single client (sequential requests, p50) through HTTP and through the repository alone, the
 * pre-index scan on the same data, and 32 connections against the repository alone.
 */
export async function runSearchBig(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, adminToken, profile, log } = ctx;
  const { files, reps } = profile.searchBig;
  const { connections, durationS } = profile.reads;
  const [user, empty, ...noise] = await provisionUsers(client, adminToken, ['big-search', 'big-empty', 'big-noise-0', 'big-noise-1', 'big-noise-2', 'big-noise-3']);
  const t = Date.now();
  const rows = await new Seeder(stack.db, log).seedUsers([
    { userId: user!.userId, files },
    ...noise.map((other, i) => ({ userId: other.userId, files: Math.round(files / noise.length), tag: `b${i}-` })),
  ]);
  await stack.db.raw('ANALYZE TABLE resources, search_grams, folder_file_counts');
  const seedSeconds = (Date.now() - t) / 1000;
  const sizes = await tableSizes(stack.db);
  log(`search-1m: ${rows} rows seeded with derived data in ${seedSeconds.toFixed(0)} s`);

  const figures: Figure[] = [];
  const table: string[][] = [];
  // The gateway's own floor in this run: token check plus one indexed query returning nothing.
  const floor = await cannon(`${stack.baseUrl}/v1/folders`, empty!.token, connections, durationS);
  log(`search-1m: GET /v1/folders (auth + 1 query) ${fmt(floor.reqPerSec)} req/s`);
  const details: Record<string, unknown> = { seedSeconds, rows, sizes, floor };
  const repo = new ListingRepository(stack.db);
  for (const [label, term, hits] of [
    [`q=${RARE_TERM}`, RARE_TERM, RARE_MATCHES],
    [`q=${COMMON_TERM} (5%)`, COMMON_TERM, undefined],
  ] as const) {
    const kase = `${files} files: search ${label}`;
    const url = `${stack.baseUrl}/v1/files/search?q=${term}`;
    const found = await repo.searchFiles(user!.userId, term, 50, 0);
    if (hits !== undefined && found.total !== hits) throw new Error(`search ${term}: total ${found.total}, expected ${hits}`);
    const scanTotal = await scanSearch(stack.db, user!.userId, term);
    if (scanTotal !== found.total) throw new Error(`search ${term}: index total ${found.total}, scan total ${scanTotal}`);
    const http = await sequential(reps, () => fetch(url, { headers: { authorization: `Bearer ${user!.token}` } }).then((r) => r.arrayBuffer()));
    const direct = await sequential(reps, () => repo.searchFiles(user!.userId, term, 50, 0));
    const scan = await sequential(3, () => scanSearch(stack.db, user!.userId, term));
    const svc = await cannon(url, user!.token, connections, durationS);
    const alone = await repositoryAlone(stack.databaseUrl, connections, Math.max(1, durationS / 2), (r) => r.searchFiles(user!.userId, term, 50, 0));
    log(`search-1m: ${kase}: total ${found.total}; p50 ${fmt(http.p50)} ms (repository ${fmt(direct.p50)}, scan ${fmt(scan.p50)}); ${fmt(svc.reqPerSec)} req/s at ${connections} (repository alone ${fmt(alone.reqPerSec)})`);
    figures.push(
      figure('search-1m', kase, 'single-client latency p50', 'ms', 'time', http.p50, [
        { name: 'repository alone', value: direct.p50 },
        { name: 'scan (before the index)', value: scan.p50 },
      ]),
      figure('search-1m', kase, `throughput at ${connections} connections`, 'req/s', 'rate', svc.reqPerSec, [
        { name: 'repository alone', value: alone.reqPerSec },
        { name: 'GET /v1/folders (auth + 1 query)', value: floor.reqPerSec },
      ]),
    );
    table.push([
      label,
      String(found.total),
      `${fmt(http.p50)} / ${fmt(http.p99)}`,
      fmt(direct.p50),
      fmt(scan.p50),
      fmt(svc.reqPerSec),
      fmt(alone.reqPerSec),
      fmtRatio(svc.reqPerSec, alone.reqPerSec, 'rate'),
      fmtRatio(svc.reqPerSec, floor.reqPerSec, 'rate'),
    ]);
    details[kase] = { http, direct, scan, service: svc, repositoryAlone: alone };
  }
  const mib = (t: string) => (sizes[t] ? `${fmt(sizes[t]!.mib)} MiB (${fmt(sizes[t]!.rows, 0)} rows)` : 'n/a');
  return {
    name: 'search-1m',
    title: `Search at ${files.toLocaleString('en-US')} files of one user (+ as many of 4 others): single client ${reps} sequential requests, then ${connections} connections for ${durationS} s`,
    headers: ['term', 'total', 'HTTP p50 / p99 ms', 'repository p50 ms', 'scan p50 ms (before)', `service req/s @${connections}`, 'repository alone req/s', 'of repository', 'of auth + 1 query'],
    rows: table,
    notes: [
      `Seeding: ${rows.toLocaleString('en-US')} rows in ${seedSeconds.toFixed(0)} s, derived data included (test/bench/seeder.ts: INSERT ... SELECT, secondary indexes rebuilt after the load).`,
      `Disk (InnoDB data + index): resources ${mib('resources')}, search_grams ${mib('search_grams')}, folder_file_counts ${mib('folder_file_counts')}.`,
      `"auth + 1 query": GET /v1/folders of a user without folders at ${connections} connections, ${fmt(floor.reqPerSec)} req/s: the gateway's cost of any authenticated request with one query.`,
      '"scan (before the index)": the same LIKE over the owner\'s names in ix_resources_search, counted and paged, as the search did before; 3 runs.',
    ],
    figures,
    details,
  };
}
