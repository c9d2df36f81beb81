import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CHUNK_LIST_QUEUE } from '../../shared/queue/chunk-list.contract';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser } from './http.client';
import { freePort, gatewayReady } from './stack';
import { figure, fmt, type Figure, type ScenarioReport } from './stats';
import { SyncthingPair } from './syncthing.pair';

/**
 * The filesync command beside Syncthing: two devices of each tool on loopback, and the time from the
 * first byte written on one device until the other holds identical bytes, for 1,000 files of 4 KiB,
 * one 256 MiB file, and 1 MiB written over the middle of that file. filesync runs as two watching
 * devices (`filesync sync DIR`) of one account through the service, and as `--once` on A then on B
 * (another account). The tools take turns in every case, their order swapped each repetition.
 * Completion is seen the same way for every tool: the receiving folder polled every 50 ms until its
 * files hold the written bytes; the time is that of the poll that first found them. Before each
 * measurement every tool has finished what earlier ones left (Syncthing's folders idle, the filesync
 * workers' chunk-list queue empty), and `sync` writes what they left in the page cache.
 */
const CLI = path.resolve(__dirname, '../../../clients/bin/filesync.js');
const MiB = 1024 * 1024;
const SMALL_FILES = 1000;
const SMALL_BYTES = 4096;
const BIG_BYTES = 256 * MiB;
const EDIT_BYTES = MiB;
const POLL_MS = 50;
const TIMEOUT_MS = 180_000;
/** Pause between two measurements, for the devices to finish what follows a sync (rescans, echoes). */
const SETTLE_MS = 3000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const elapsed = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;

/** Polls `check` until it holds: the time of the poll that first found it, in ms since `t0`. */
async function until(t0: bigint, check: () => Promise<boolean>, what: string): Promise<number> {
  for (;;) {
    const at = elapsed(t0);
    if (await check().catch(() => false)) return at;
    if (at > TIMEOUT_MS) throw new Error(`${what}: not done after ${TIMEOUT_MS} ms`);
    await sleep(POLL_MS);
  }
}

/** What one device is asked to sync and how it is told: the watching tools need nothing, `--once` runs A then B. */
interface Tool {
  name: string;
  a: string;
  b: string;
  /** Runs after the write, for a tool that does not watch. */
  kick?: () => Promise<void>;
  settle: () => Promise<void>;
  /** The current bytes of the large file this tool's turns write, by repetition. */
  big: Map<number, Buffer>;
}

async function smallCase(tool: Tool, rep: number): Promise<number> {
  const sub = `small${rep}`;
  const files = Array.from({ length: SMALL_FILES }, () => randomBytes(SMALL_BYTES));
  const t0 = process.hrtime.bigint();
  await fs.mkdir(path.join(tool.a, sub));
  for (const [i, bytes] of files.entries()) await fs.writeFile(path.join(tool.a, sub, `f${i}.bin`), bytes);
  await tool.kick?.();
  return until(t0, async () => {
    if ((await fs.readdir(path.join(tool.b, sub))).length < SMALL_FILES) return false;
    for (const [i, bytes] of files.entries()) if (!(await fs.readFile(path.join(tool.b, sub, `f${i}.bin`))).equals(bytes)) return false;
    return true;
  }, `${tool.name} small files`);
}

async function sameBytes(file: string, want: Buffer, before?: string): Promise<boolean> {
  const st = await fs.stat(file);
  if (st.size !== want.length || (before !== undefined && signature(st) === before)) return false;
  return (await fs.readFile(file)).equals(want);
}

const signature = (st: { ino: number; ctimeMs: number; size: number }) => `${st.ino} ${st.ctimeMs} ${st.size}`;

async function bigCase(tool: Tool, rep: number): Promise<number> {
  const bytes = randomBytes(BIG_BYTES);
  tool.big.set(rep, bytes);
  const t0 = process.hrtime.bigint();
  await fs.writeFile(path.join(tool.a, `big${rep}.bin`), bytes);
  await tool.kick?.();
  return until(t0, () => sameBytes(path.join(tool.b, `big${rep}.bin`), bytes), `${tool.name} large file`);
}

async function editCase(tool: Tool, rep: number): Promise<number> {
  const bytes = tool.big.get(rep)!;
  const target = path.join(tool.b, `big${rep}.bin`);
  const before = signature(await fs.stat(target));
  const patch = randomBytes(EDIT_BYTES);
  const offset = BIG_BYTES / 2 + 12_345;
  patch.copy(bytes, offset);
  const t0 = process.hrtime.bigint();
  const fd = await fs.open(path.join(tool.a, `big${rep}.bin`), 'r+');
  await fd.write(patch, 0, patch.length, offset);
  await fd.close();
  await tool.kick?.();
  const ms = await until(t0, () => sameBytes(target, bytes, before), `${tool.name} edit`);
  tool.big.delete(rep);
  return ms;
}

const ALL_CASES = [
  { key: 'small', name: `${SMALL_FILES} files of 4 KiB`, run: smallCase, goal: "<= Syncthing's" },
  { key: 'big', name: 'one 256 MiB file', run: bigCase, goal: "<= 1.2x Syncthing's" },
  { key: 'edit', name: '1 MiB written inside it', run: editCase, goal: "<= Syncthing's (delta path)" },
];

function runCli(args: string[], env: Record<string, string>, profDir?: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...cpuProf(profDir, 'once'), CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

/** BENCH_CLI_CPU_PROF=<dir>: the command's processes write V8 CPU profiles there. */
const cpuProf = (dir: string | undefined, name: string) => (dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}-${Date.now()}-${process.hrtime.bigint() % 100000n}.cpuprofile`] : []);

const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const spread = (xs: number[]) => `${fmt(median(xs) / 1000)} s (${fmt(Math.min(...xs) / 1000)}-${fmt(Math.max(...xs) / 1000)})`;

export async function runSyncthing(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const wanted = ctx.syncthingCases ?? ALL_CASES.map((c) => c.key);
  for (const k of wanted) if (!ALL_CASES.some((c) => c.key === k)) throw new Error(`unknown Syncthing case ${k}; known: small, big, edit`);
  // The edit writes inside the large file's case's file: it brings that case along.
  const CASES = ALL_CASES.filter((c) => wanted.includes(c.key) || (c.key === 'big' && wanted.includes('edit')));
  // Five: a large file's time swings with the host (a page the hypervisor backs on first touch costs
  // several times a reused one, and the three writes of filesync's path meet more of them than
  // Syncthing's two), so the medians need more than three.
  const reps = profile.name === 'quick' ? 2 : 5;
  const profDir = process.env.BENCH_CLI_CPU_PROF;
  const work = path.join(stack.dir, 'bench-syncthing');
  const pair = new SyncthingPair(path.join(work, 'syncthing'));
  // A gateway of its own whose upload limit takes the large file.
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const gateway = await stack.launch('gateway', 'syncthing-gateway', { PORT: String(port), MAX_UPLOAD_BYTES: String(1024 * MiB) }, () => gatewayReady(baseUrl));
  const watchers: ChildProcess[] = [];
  const watchOutput: string[] = ['', ''];
  // When each watching device printed its last action line of a case: where a slow case spent its time.
  const actions: Array<{ device: number; line: string; at: bigint }> = [];
  const phases: Array<Record<string, unknown>> = [];
  const samples: Record<string, Record<string, number[]>> = {};
  try {
    const [watchUser, onceUser] = (await provisionUsers(client, ctx.adminToken, ['st-watch', 'st-once'])) as [BenchUser, BenchUser];
    const envOf = (u: BenchUser, device: string) => ({ FILESYNC_SERVER: baseUrl, FILESYNC_USERNAME: u.username, FILESYNC_PASSWORD: u.password, FILESYNC_DEVICE_NAME: device });
    const dirs = ['fs-a', 'fs-b', 'once-a', 'once-b'].map((d) => path.join(work, d)) as [string, string, string, string];
    for (const d of dirs) await fs.mkdir(d, { recursive: true });

    await pair.start();
    const [stA, stB] = pair.folders;
    for (const [i, dir] of [dirs[0], dirs[1]].entries()) {
      const w = spawn(process.execPath, [...cpuProf(profDir, `watch-${i ? 'b' : 'a'}`), CLI, 'sync', dir], { env: { ...process.env, ...envOf(watchUser, `watch-${i}`) }, stdio: ['ignore', 'pipe', 'pipe'] });
      const keep = (d: Buffer) => {
        watchOutput[i] = (watchOutput[i] + d.toString()).slice(-4000);
        const at = process.hrtime.bigint();
        for (const line of d.toString().split('\n')) if (/^(uploaded|downloaded) /.test(line)) actions.push({ device: i, line, at });
      };
      w.stdout!.on('data', keep);
      w.stderr!.on('data', keep);
      watchers.push(w);
    }
    const once = async (dir: string, device: string) => {
      const run = await runCli(['sync', dir, '--once'], envOf(onceUser, device), profDir);
      if (run.code !== 0) throw new Error(`filesync --once failed (${run.code}): ${run.out.slice(-500)}`);
    };
    // The service's background work after a sync (chunk lists of large contents) is done before the next measurement.
    const workersCaughtUp = async () => {
      const deadline = Date.now() + TIMEOUT_MS;
      while (!(await stack.queuesIdle([CHUNK_LIST_QUEUE]))) {
        if (Date.now() > deadline) throw new Error('filesync: chunk lists still queued');
        await sleep(POLL_MS);
      }
    };
    const tools: Tool[] = [
      { name: `Syncthing`, a: stA, b: stB, settle: () => pair.idle(), big: new Map() },
      { name: 'filesync sync (watching)', a: dirs[0], b: dirs[1], settle: workersCaughtUp, big: new Map() },
      { name: 'filesync sync --once, A then B', a: dirs[2], b: dirs[3], kick: async () => { await once(dirs[2], 'once-a'); await once(dirs[3], 'once-b'); }, settle: workersCaughtUp, big: new Map() },
    ];
    // Each tool carries a first file across before anything is measured: both devices up and linked.
    for (const tool of tools) {
      const body = randomBytes(64);
      const t0 = process.hrtime.bigint();
      await fs.writeFile(path.join(tool.a, 'warm-up.bin'), body);
      await tool.kick?.();
      log(`syncthing: ${tool.name} warm-up in ${fmt(await until(t0, () => sameBytes(path.join(tool.b, 'warm-up.bin'), body), `${tool.name} warm-up`))} ms`);
      await tool.settle();
    }
    for (let rep = 0; rep < reps; rep++) {
      const order = rep % 2 === 0 ? tools : [...tools].reverse();
      for (const c of CASES) {
        for (const tool of order) {
          await sleep(SETTLE_MS);
          // Every tool, not only the one measured: none runs beside what another left (a rescan, a hash).
          const settling = process.hrtime.bigint();
          for (const t of tools) await t.settle();
          const settled = elapsed(settling);
          if (settled > 100) log(`syncthing: ${fmt(settled)} ms until every tool was idle, before ${tool.name}`);
          // What earlier cases wrote goes to disk first: each tool starts without another's writeback.
          await promisify(execFile)('sync');
          const start = process.hrtime.bigint();
          actions.length = 0;
          const ms = await c.run(tool, rep);
          if (tool.a === dirs[0]) {
            const at = (device: number, verb: string, pick: 'first' | 'last') => {
              const hits = actions.filter((x) => x.device === device && x.line.startsWith(verb));
              const hit = pick === 'first' ? hits[0] : hits.pop();
              return hit ? Math.round(Number(hit.at - start) / 1e6) : undefined;
            };
            phases.push({ rep, case: c.name, ms: Math.round(ms), firstUploadOnA: at(0, 'uploaded', 'first'), lastUploadOnA: at(0, 'uploaded', 'last'), firstDownloadOnB: at(1, 'downloaded', 'first'), lastDownloadOnB: at(1, 'downloaded', 'last'), linesA: actions.filter((x) => x.device === 0).length, linesB: actions.filter((x) => x.device === 1).length });
            log(`syncthing: watching phases ${JSON.stringify(phases[phases.length - 1])}`);
          }
          ((samples[c.name] ??= {})[tool.name] ??= []).push(ms);
          log(`syncthing: rep ${rep + 1}, ${c.name}, ${tool.name}: ${fmt(ms)} ms (load ${os.loadavg().map((l) => fmt(l)).join(' ')})`);
        }
      }
    }
  } catch (err) {
    log(`syncthing: watcher output: A: ${watchOutput[0]!.slice(-1500)} | B: ${watchOutput[1]!.slice(-1500)}`);
    throw err;
  } finally {
    for (const w of watchers) w.kill('SIGTERM');
    await Promise.all(watchers.map((w) => (w.exitCode === null && w.signalCode === null ? new Promise((r) => w.once('exit', r)) : undefined)));
    await pair.stop();
    await gateway.stop();
    await fs.rm(work, { recursive: true, force: true });
  }
  const version = await pair.version;
  const figures: Figure[] = [];
  const rows = CASES.map((c) => {
    const s = samples[c.name]!;
    const [st, watch, once] = [s['Syncthing']!, s['filesync sync (watching)']!, s['filesync sync --once, A then B']!];
    figures.push(figure('syncthing', c.name, 'write on A to identical bytes on B, watching', 'ms', 'time', median(watch), [{ name: version, value: median(st) }]));
    figures.push(figure('syncthing', c.name, 'write on A to identical bytes on B, --once A then B', 'ms', 'time', median(once), [{ name: version, value: median(st) }]));
    return [c.name, spread(st), spread(watch), fmt(median(watch) / median(st), 2), spread(once), c.goal];
  });
  return {
    name: 'syncthing',
    title: `The filesync command beside ${version} (two devices each, loopback; medians of ${reps}, min-max)`,
    headers: ['case', 'Syncthing', 'filesync, watching', 'ratio', 'filesync --once A, B', 'goal'],
    rows,
    notes: [
      `Syncthing: two instances with homes of their own, static addresses on 127.0.0.1, discovery, relays and NAT off, one folder with its watcher at a ${1} s delay (its fastest way to notice a write), normal priority.`,
      'filesync: two devices of one account running `filesync sync DIR` through a gateway and worker of the bench; the --once column runs `sync --once` on A after the write, then on B.',
      'Times run from the first byte written on A until a poll of B (every 50 ms) finds identical bytes; tools alternate in every case, their order swapped each repetition; before each, every tool idle and `sync`, so none starts beside the background work or behind the writeback of another.',
    ],
    figures,
    details: { samples, watchingPhases: phases },
  };
}
