/**
 * `npm run bench [-- --quick] [-- --only=sync,reads,snapshot,transfer,tus,login,changes,noisy-neighbour,dav,quota,links,redis-cluster,s3,client,delta,chunk-lists,sync-scale,search-1m,peer,webapp,webapp-upload,thumbnails,syncthing] [-- --cpu-prof] [-- --syncthing-cases=small,big,edit]`
 *
 * Starts the built gateway and worker as real processes on a database, upload directory and queue
 * prefix of their own, measures each scenario through the HTTP API next to its ceiling measured in
 * the same run, prints the tables and writes them as JSON (and markdown) under bench-results/.
 * Everything the run created is removed at the end, also when it fails or is interrupted.
 */
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import IORedis from 'ioredis';
import { PROFILES, type BenchContext, type Profile } from './context';
import { HttpClient, login } from './http.client';
import { runLogin } from './login.bench';
import { summarizeProfiles } from './profile.summary';
import { runReads } from './reads.bench';
import { runSearchBig } from './search.bench';
import { runSnapshot } from './snapshot.bench';
import { ADMIN, BenchStack, LOGIN_CONCURRENCY, REDIS_URL, SYNC_CONCURRENCY, SYNC_TIMEOUT_MS } from './stack';
import { renderReport, type ScenarioReport } from './stats';
import { runSync } from './sync.bench';
import { runRedisCluster } from './cluster.bench';
import { runS3 } from './s3.bench';
import { runSyncScale } from './sync.scale';
import { runTransfer } from './transfer.bench';
import { runChanges } from './changes.bench';
import { runNoisy } from './noisy.bench';
import { runClient } from './client.bench';
import { runTus } from './tus.bench';
import { runDav } from './dav.bench';
import { runQuota } from './quota.bench';
import { runPeer } from './peer.bench';
import { runLinks } from './links.bench';
import { runDelta } from './delta.bench';
import { runChunkLists } from './chunk-lists.bench';
import { runSyncthing } from './syncthing.bench';
import { runWebApp } from './webapp.bench';
import { runWebAppUpload } from './webapp.upload.bench';
import { runThumbnails } from './thumbnails.bench';

const SCENARIOS: Record<string, (ctx: BenchContext) => Promise<ScenarioReport>> = {
  sync: runSync,
  reads: runReads,
  snapshot: runSnapshot,
  transfer: runTransfer,
  tus: runTus,
  login: runLogin,
  changes: runChanges,
  'noisy-neighbour': runNoisy,
  dav: runDav,
  quota: runQuota,
  links: runLinks,
  'search-1m': runSearchBig,
  // Only when named, with BENCH_PEER_URL and BENCH_PEER_TOKEN set: an external service beside ours.
  peer: runPeer,
  // Only when named: needs the `syncthing` command (the Debian package) beside the service.
  syncthing: runSyncthing,
  // Each starts a second service of its own (on a Redis Cluster, on an RGW) and stops it when done.
  'redis-cluster': runRedisCluster,
  s3: runS3,
  client: runClient,
  delta: runDelta,
  'chunk-lists': runChunkLists,
  // Only when named: Chromium against the web app (first view, a 10,000-file folder, drops).
  webapp: runWebApp,
  // Only when named: Chromium uploads a 1 GiB file (256 MiB with --quick).
  'webapp-upload': runWebAppUpload,
  // Only when named: 6,300 photographs uploaded, about 5 minutes.
  thumbnails: runThumbnails,
  // Last: it starts worker processes of its own (and stops them when done).
  'sync-scale': runSyncScale,
};
/** Run unless --only names others; search-1m seeds two million rows, peer and syncthing need external software, so they run only when named. */
const DEFAULT_SCENARIOS = Object.keys(SCENARIOS).filter((name) => name !== 'search-1m' && name !== 'peer' && name !== 'webapp' && name !== 'webapp-upload' && name !== 'thumbnails' && name !== 'syncthing');

interface Args {
  profile: Profile;
  only: string[];
  cpuProf: boolean;
  outDir: string;
  syncthingCases?: string[];
}

function parseArgs(argv: string[]): Args {
  const args: Args = { profile: PROFILES.full, only: DEFAULT_SCENARIOS, cpuProf: false, outDir: path.resolve('bench-results') };
  for (const arg of argv) {
    if (arg === '--quick') args.profile = PROFILES.quick;
    else if (arg === '--cpu-prof') args.cpuProf = true;
    else if (arg.startsWith('--only=')) args.only = arg.slice('--only='.length).split(',').filter(Boolean);
    else if (arg.startsWith('--out=')) args.outDir = path.resolve(arg.slice('--out='.length));
    else if (arg.startsWith('--syncthing-cases=')) args.syncthingCases = arg.slice('--syncthing-cases='.length).split(',').filter(Boolean);
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: npm run bench -- [--quick] [--only=sync,reads,snapshot,transfer,tus,login,changes,noisy-neighbour,dav,quota,links,redis-cluster,s3,client,delta,chunk-lists,sync-scale,search-1m,peer,webapp,webapp-upload,thumbnails,syncthing] [--cpu-prof] [--out=dir] [--syncthing-cases=small,big,edit]');
      process.exit(0);
    } else throw new Error(`unknown argument ${arg}`);
  }
  for (const name of args.only) if (!SCENARIOS[name]) throw new Error(`unknown scenario ${name}; known: ${Object.keys(SCENARIOS).join(', ')}`);
  return args;
}

/** Driver errors quote the whole statement; a bulk INSERT makes that megabytes. */
const short = (text: string, max = 2000) => (text.length > max ? `${text.slice(0, max)}... (${text.length} characters)` : text);
const describe = (err: unknown) => short(err instanceof Error ? (err.stack ?? err.message) : String(err));

const log = (line: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);

async function machine(stack: BenchStack): Promise<Record<string, unknown>> {
  const [mysqlRows] = (await stack.db.raw('SELECT VERSION() AS v')) as [Array<{ v: string }>];
  const redis = new IORedis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const info = await redis.info('server').finally(() => redis.disconnect());
  const disk = (() => {
    try {
      return execFileSync('df', ['-hT', stack.dir], { encoding: 'utf8' }).trim().split('\n').pop();
    } catch {
      return undefined;
    }
  })();
  return {
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model,
    memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    mariadb: mysqlRows[0]?.v,
    redis: /redis_version:(\S+)/.exec(info)?.[1],
    disk,
    loadAverageAtStart: os.loadavg().map((l) => Math.round(l * 100) / 100),
    serviceSettings: { SYNC_CONCURRENCY, LOGIN_CONCURRENCY, SYNC_TIMEOUT_MS, LOG_LEVEL: 'warn', LOGIN_RATE_LIMIT: 0, LOGIN_ADDRESS_RATE_LIMIT: 0, REGISTER_RATE_LIMIT: 0 },
  };
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const stamp = new Date(started).toISOString().replace(/[:.]/g, '-');
  const profDir = args.cpuProf ? path.join(args.outDir, `profiles-${stamp}`) : undefined;
  if (profDir) await fs.mkdir(profDir, { recursive: true });
  const stack = new BenchStack({ log, ...(profDir ? { cpuProfDir: profDir } : {}) });

  // Whatever ends the run early — a signal, a crash anywhere — the processes, database, keys and files go.
  let aborting = false;
  const abort = (why: string, code: number) => {
    if (aborting) return;
    aborting = true;
    log(`${why}: cleaning up`);
    void stack.stop().finally(() => process.exit(code));
  };
  process.on('SIGINT', () => abort('SIGINT', 130));
  process.on('SIGTERM', () => abort('SIGTERM', 143));
  process.on('uncaughtException', (err) => abort(`uncaught ${describe(err)}`, 1));
  process.on('unhandledRejection', (err) => abort(`unhandled rejection ${describe(err)}`, 1));
  // Output piped into `head` and the like must not crash the run before it cleans up.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);

  const reports: ScenarioReport[] = [];
  const failures: Array<{ scenario: string; error: string }> = [];
  let machineInfo: Record<string, unknown> = {};
  let client: HttpClient | undefined;
  try {
    log(`profile ${args.profile.name}: ${args.only.join(', ')}; database ${stack.name}`);
    await stack.start();
    machineInfo = await machine(stack);
    client = new HttpClient(stack.baseUrl);
    const admin = await login(client, ADMIN.username, ADMIN.password);
    const ctx: BenchContext = { stack, client, adminToken: admin.token, profile: args.profile, log, syncthingCases: args.syncthingCases };
    for (const name of args.only) {
      const t = Date.now();
      try {
        reports.push(await SCENARIOS[name]!(ctx));
        log(`${name}: done in ${((Date.now() - t) / 1000).toFixed(1)} s`);
      } catch (err) {
        failures.push({ scenario: name, error: describe(err) });
        log(`${name}: FAILED: ${short(err instanceof Error ? err.message : String(err), 500)}`);
      }
    }
  } catch (err) {
    failures.push({ scenario: 'setup', error: describe(err) });
    log(`setup FAILED: ${short(err instanceof Error ? err.message : String(err), 500)}`);
  } finally {
    client?.close();
    log('cleaning up: processes, database, Redis keys, files');
    await stack.stop();
  }
  const runtimeS = (Date.now() - started) / 1000;

  const profiles = profDir ? await summarizeProfiles(profDir) : undefined;
  const markdown = [
    `## filesync benchmark (${args.profile.name}), ${new Date(started).toISOString()}`,
    '',
    `Machine: ${machineInfo.nproc} CPUs (${machineInfo.cpu}), ${machineInfo.memoryGiB} GiB, ${machineInfo.kernel}; Node ${machineInfo.node}, MariaDB ${machineInfo.mariadb}, Redis ${machineInfo.redis}. Total runtime ${runtimeS.toFixed(0)} s.`,
    '',
    ...reports.flatMap((r) => [renderReport(r), '']),
    ...(profiles ? [profiles.markdown, ''] : []),
    ...failures.map((f) => `FAILED ${f.scenario}: ${f.error}`),
  ].join('\n');
  console.log(markdown);

  await fs.mkdir(args.outDir, { recursive: true });
  const base = path.join(args.outDir, `bench-${stamp}`);
  const json = {
    startedAt: new Date(started).toISOString(),
    runtimeSeconds: runtimeS,
    profile: args.profile,
    scenarios: args.only,
    machine: machineInfo,
    figures: reports.flatMap((r) => r.figures),
    reports: reports.map((r) => ({ name: r.name, title: r.title, headers: r.headers, rows: r.rows, notes: r.notes, extraTables: r.extraTables ?? [], details: r.details })),
    cpuProfiles: profiles?.data,
    failures,
  };
  await fs.writeFile(`${base}.json`, `${JSON.stringify(json, null, 2)}\n`);
  await fs.writeFile(`${base}.md`, `${markdown}\n`);
  log(`wrote ${base}.json and ${base}.md; total ${runtimeS.toFixed(0)} s`);
  return failures.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
