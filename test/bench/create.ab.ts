/**
 * `node dist/test/bench/create.ab.js --base=<other build's dist> [--rounds=5] [--shapes=create100,create1,mix100] [--prefill=0]`
 * (or `npm run bench:create-ab -- --base=...`)
 *
 * A/B of the worker's own `BatchApplier.apply` between two builds: this one (or `--current=<dist>`)
 * and `--base`. Each build runs its own migrations on a database of its own; then rounds alternate
 * the two builds (the order flips every round), each round on a new user and device, applying the
 * same batches to both. Prints ops/s and the p50 time of one batch per round and shape, the median ratio current/base, and the
 * search index entries (rows of `search_grams`) a created file adds. `--prefill=N` first gives each
 * database another user with N files created through the same applier, so the index is not empty.
 * The databases are dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { OpsGenerator } from './ops.generator';

interface Applier {
  apply(input: { userId: string; deviceId: string; opsJson: string }): Promise<{ applied: unknown[]; failed: unknown }>;
}

/** What the A/B loads from a build's dist/. */
interface Build {
  label: string;
  dist: string;
  db: Knex;
  applier: Applier;
  databaseName: string;
}

interface Shape {
  name: string;
  batches: number;
  size: number;
  /** The ops of one batch for the device `tag`. */
  batch: (gen: Outbox) => string;
}

const newId = () => randomBytes(16).toString('hex');

/** One device's ops for a round: file creates only, or the sync bench's mix. */
class Outbox {
  private n = 0;
  private opId = 1;
  private readonly mix: OpsGenerator;

  constructor(private readonly tag: string, seed: number) {
    this.mix = new OpsGenerator(tag, seed);
  }

  creates(size: number): string {
    return JSON.stringify(
      Array.from({ length: size }, () => {
        const n = this.n++;
        const name = `${this.tag}-file-${n}.txt`;
        return { opId: this.opId++, type: 'create', resourceId: newId(), payload: { resourceType: 'file', name, parentId: null, size: 1000 + n, mimeType: 'text/plain' } };
      }),
    );
  }

  mixed(size: number): string {
    return this.mix.batch(size);
  }
}

const SHAPES: Record<string, Shape> = {
  create100: { name: '20 batches of 100 file creates', batches: 20, size: 100, batch: (o) => o.creates(100) },
  create1: { name: '200 batches of 1 file create', batches: 200, size: 1, batch: (o) => o.creates(1) },
  mix100: { name: '20 batches of 100 ops of the sync mix', batches: 20, size: 100, batch: (o) => o.mixed(100) },
};

interface Args {
  base: string;
  current: string;
  rounds: number;
  shapes: string[];
  prefill: number;
  server: string;
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    base: '',
    current: path.resolve(__dirname, '../..'),
    rounds: 5,
    shapes: Object.keys(SHAPES),
    prefill: 0,
    server: process.env.AB_MYSQL ?? 'mysql://root@127.0.0.1:3306',
  };
  for (const arg of argv) {
    const [key, value = ''] = arg.split('=', 2) as [string, string?];
    if (key === '--base') args.base = path.resolve(value);
    else if (key === '--current') args.current = path.resolve(value);
    else if (key === '--rounds') args.rounds = Number(value);
    else if (key === '--shapes') args.shapes = value.split(',').filter(Boolean);
    else if (key === '--prefill') args.prefill = Number(value);
    else throw new Error(`unknown argument ${arg}`);
  }
  if (!args.base) throw new Error('--base=<dist directory of the build to compare with> is required');
  for (const s of args.shapes) if (!SHAPES[s]) throw new Error(`unknown shape ${s}; known: ${Object.keys(SHAPES).join(', ')}`);
  return args;
}

/* eslint-disable @typescript-eslint/no-require-imports */
async function load(label: string, dist: string, server: string): Promise<Build> {
  const knexMod = require(path.join(dist, 'shared/db/knex.js'));
  const { migrationSource } = require(path.join(dist, 'shared/db/migrations/index.js'));
  const { OwnerTransactions } = require(path.join(dist, 'shared/db/owner.transaction.js'));
  const { BatchApplier } = require(path.join(dist, 'services/worker/batch.applier.js'));
  const databaseName = `ab_${label}_${process.pid}`;
  const url = `${server}/${databaseName}`;
  await knexMod.ensureDatabase(url);
  // One connection: the batches run one after the other, and its server thread's CPU time can be read.
  const db: Knex = knexMod.createDb(url, { min: 1, max: 1, multipleStatements: true });
  await db.migrate.latest({ migrationSource, tableName: 'knex_migrations' });
  return { label, dist, db, databaseName, applier: new BatchApplier(new OwnerTransactions(db)) };
}

async function newUser(db: Knex): Promise<string> {
  const id = newId();
  const now = new Date();
  await db('users').insert({ id, username: `ab${id.slice(0, 8)}`, username_normalized: `ab${id}`, password_hash: 'x', created_at: now, updated_at: now });
  return id;
}

async function hasTable(db: Knex, table: string): Promise<boolean> {
  return db.schema.hasTable(table);
}

/**
 * CPU time (ms) the database server's thread of `db`'s one connection has used so far, read from
 * /proc when the server runs on this machine (Linux, readable by this user); undefined otherwise.
 * Unlike wall time it hardly depends on what else the machine is doing.
 */
async function serverCpuMs(db: Knex): Promise<{ tid: number; ms: number } | undefined> {
  try {
    const [[row]] = (await db.raw('SELECT @@pid_file AS f, (SELECT tid FROM information_schema.processlist WHERE id = CONNECTION_ID()) AS tid')) as [[{ f: string; tid: number }]];
    const pid = readFileSync(row!.f, 'utf8').trim();
    const ns = Number(readFileSync(`/proc/${pid}/task/${row!.tid}/schedstat`, 'utf8').split(' ')[0]);
    return { tid: Number(row!.tid), ms: ns / 1e6 };
  } catch {
    return undefined;
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

interface RunResult {
  opsPerSec: number;
  /** Median time of one batch, ms. */
  p50Ms: number;
  /** Server CPU and this process's CPU per 100 ops, ms. */
  serverMs?: number;
  clientMs: number;
  gramsPerFile?: number;
}

/** Applies `batches` to a new user of `build`; ops/s of the whole sequence, CPU, and index rows per file. */
async function runOn(build: Build, batches: string[], size: number): Promise<RunResult> {
  const userId = await newUser(build.db);
  const deviceId = newId();
  const cpu0 = await serverCpuMs(build.db);
  const client0 = process.cpuUsage();
  const t = process.hrtime.bigint();
  const times: number[] = [];
  for (const opsJson of batches) {
    const b0 = process.hrtime.bigint();
    const result = await build.applier.apply({ userId, deviceId, opsJson });
    times.push(Number(process.hrtime.bigint() - b0) / 1e6);
    if (result.failed !== null || result.applied.length !== size) throw new Error(`${build.label}: batch failed: ${JSON.stringify(result.failed)}`);
  }
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  const client = process.cpuUsage(client0);
  const cpu1 = await serverCpuMs(build.db);
  const per100 = 100 / (batches.length * size);
  const serverMs = cpu0 && cpu1 && cpu0.tid === cpu1.tid ? (cpu1.ms - cpu0.ms) * per100 : undefined;
  const clientMs = ((client.user + client.system) / 1000) * per100;
  let gramsPerFile: number | undefined;
  if (await hasTable(build.db, 'search_grams')) {
    const [[g]] = (await build.db.raw('SELECT COUNT(*) AS n FROM search_grams WHERE user_id = ?', [userId])) as [[{ n: number }]];
    const [[f]] = (await build.db.raw("SELECT COUNT(*) AS n FROM resources WHERE user_id = ? AND type = 'file' AND alive = 1", [userId])) as [[{ n: number }]];
    gramsPerFile = Number(f!.n) > 0 ? Number(g!.n) / Number(f!.n) : 0;
  }
  return {
    opsPerSec: (batches.length * size) / seconds,
    p50Ms: median(times),
    clientMs,
    ...(serverMs === undefined ? {} : { serverMs }),
    ...(gramsPerFile === undefined ? {} : { gramsPerFile }),
  };
}

async function indexDisk(build: Build): Promise<string> {
  const [rows] = (await build.db.raw(
    `SELECT table_name AS t, data_length + index_length AS bytes, table_rows AS n FROM information_schema.tables
     WHERE table_schema = ? AND table_name IN ('resources', 'search_grams')`,
    [build.databaseName],
  )) as [Array<{ t: string; bytes: number; n: number }>];
  return rows.map((r) => `${r.t} ${(Number(r.bytes) / 2 ** 20).toFixed(1)} MiB (~${r.n} rows)`).join(', ');
}

const fmtMs = (ms: number | undefined) => (ms === undefined ? '-' : ms.toFixed(2));


async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const builds: Build[] = [];
  try {
    builds.push(await load('base', args.base, args.server));
    builds.push(await load('current', args.current, args.server));
    console.log(`base ${args.base}\ncurrent ${args.current}\nrounds ${args.rounds}, shapes ${args.shapes.join(', ')}`);
    if (args.prefill > 0) {
      for (const b of builds) {
        const out = new Outbox('prefill', 1);
        await runOn(b, Array.from({ length: Math.ceil(args.prefill / 500) }, () => out.creates(500)), 500);
        console.log(`${b.label}: prefilled ${args.prefill} files; ${await indexDisk(b)}`);
      }
    }
    // One warm-up batch per build and shape, not counted.
    for (const b of builds) for (const s of args.shapes) await runOn(b, [SHAPES[s]!.batch(new Outbox('warm', 7))], SHAPES[s]!.size);

    type Series = {
      base: number[];
      current: number[];
      ratios: number[];
      grams: number[];
      p50: { base: number[]; current: number[] };
      cpu: Record<string, { server: number[]; client: number[] }>;
    };
    const results = new Map<string, Series>();
    for (let round = 1; round <= args.rounds; round++) {
      for (const s of args.shapes) {
        const shape = SHAPES[s]!;
        const out = new Outbox(`r${round}`, 100 + round);
        const batches = Array.from({ length: shape.batches }, () => shape.batch(out));
        const order = round % 2 === 1 ? builds : [...builds].reverse();
        const got: Record<string, number> = {};
        const cpu: Record<string, RunResult> = {};
        let grams: number | undefined;
        for (const b of order) {
          const r = await runOn(b, batches, shape.size);
          got[b.label] = r.opsPerSec;
          cpu[b.label] = r;
          if (b.label === 'current') grams = r.gramsPerFile;
        }
        const entry: Series = results.get(s) ?? {
          base: [],
          current: [],
          ratios: [],
          grams: [],
          p50: { base: [], current: [] },
          cpu: { base: { server: [], client: [] }, current: { server: [], client: [] } },
        };
        entry.p50.base.push(cpu.base!.p50Ms);
        entry.p50.current.push(cpu.current!.p50Ms);
        for (const label of ['base', 'current']) {
          if (cpu[label]!.serverMs !== undefined) entry.cpu[label]!.server.push(cpu[label]!.serverMs!);
          entry.cpu[label]!.client.push(cpu[label]!.clientMs);
        }
        entry.base.push(got.base!);
        entry.current.push(got.current!);
        entry.ratios.push(got.current! / got.base!);
        if (grams !== undefined) entry.grams.push(grams);
        results.set(s, entry);
        console.log(
          `round ${round} ${s.padEnd(9)} base ${got.base!.toFixed(0).padStart(6)} ops/s  current ${got.current!.toFixed(0).padStart(6)} ops/s  ` +
            `ratio ${(got.current! / got.base!).toFixed(2)}  p50 batch ms ${cpu.base!.p50Ms.toFixed(2)} / ${cpu.current!.p50Ms.toFixed(2)}  cpu ms/100 ops server ${fmtMs(cpu.base!.serverMs)} / ${fmtMs(cpu.current!.serverMs)}` +
            `, client ${fmtMs(cpu.base!.clientMs)} / ${fmtMs(cpu.current!.clientMs)}` +
            `${grams === undefined ? '' : `  index rows/file ${grams.toFixed(1)}`}`,
        );
      }
    }
    console.log('\nmedians (ops/s; ratio = median of the per-round ratios):');
    for (const [s, r] of results) {
      console.log(
        `${SHAPES[s]!.name.padEnd(40)} base ${median(r.base).toFixed(0).padStart(6)}  current ${median(r.current).toFixed(0).padStart(6)}  ` +
          `ratio ${median(r.ratios).toFixed(2)} (min ${Math.min(...r.ratios).toFixed(2)}, max ${Math.max(...r.ratios).toFixed(2)})` +
          (r.grams.length ? `  index rows/file ${median(r.grams).toFixed(1)}` : ''),
      );
      console.log(`${''.padEnd(40)} p50 of one batch, ms (median of rounds): base ${median(r.p50.base).toFixed(2)}  current ${median(r.p50.current).toFixed(2)}`);
      const c = r.cpu;
      if (c.base!.server.length && c.current!.server.length) {
        console.log(
          `${''.padEnd(40)} cpu ms per 100 ops (median): server ${median(c.base!.server).toFixed(2)} / ${median(c.current!.server).toFixed(2)}` +
            ` (base / current, ${(median(c.base!.server) / median(c.current!.server)).toFixed(2)}), client ${median(c.base!.client).toFixed(2)} / ${median(c.current!.client).toFixed(2)}`,
        );
      }
    }
    for (const b of builds) console.log(`${b.label}: ${await indexDisk(b)}`);
  } finally {
    for (const b of builds) {
      await b.db.raw(`DROP DATABASE IF EXISTS \`${b.databaseName}\``).catch(() => undefined);
      await b.db.destroy();
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
