import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, openAsBlob, promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser } from './http.client';
import { figure, fmt, type Figure, type ScenarioReport } from './stats';

/**
 * The `filesync` command against the service (issue "The filesync client", Performance): a first
 * sync of many small files against the service's own multipart upload rate at the same connection
 * count (the command uploads 4 at a time), large files against one upload at a time, a `--once`
 * with nothing to do and the command's peak RSS, and the time from a write on one watching device
 * to the bytes on another.
 */
const CLI = path.resolve(__dirname, '../../../clients/bin/filesync.js');
const CONNECTIONS = 4;
const MB = 1e6;

function peakRss(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Runs the command to its end: wall time and the highest peak RSS seen while it ran. */
function runCli(args: string[], env: Record<string, string>): Promise<{ ms: number; rss: number; code: number | null; out: string }> {
  return new Promise((resolve) => {
    const t = process.hrtime.bigint();
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    let rss = 0;
    const poll = setInterval(() => (rss = Math.max(rss, peakRss(child.pid!))), 10);
    child.on('exit', (code) => {
      clearInterval(poll);
      resolve({ ms: Number(process.hrtime.bigint() - t) / 1e6, rss, code, out });
    });
  });
}

async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

export async function runClient(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const quick = profile.name === 'quick';
  const smallCount = quick ? 1_000 : 10_000;
  const bigCount = 8;
  const bigBytes = quick ? 8 * 1024 * 1024 + 4096 : 128 * 1024 * 1024;
  const latencyReps = quick ? 5 : 15;
  const [ceilingUser, cliUser, watchUser] = (await provisionUsers(client, ctx.adminToken, ['cl-ceil', 'cl-cli', 'cl-watch'])) as BenchUser[] as [BenchUser, BenchUser, BenchUser];
  const sdk = (u: BenchUser) => new FilesyncClient({ server: stack.baseUrl, token: u.token });
  const envOf = (u: BenchUser, device: string) => ({ FILESYNC_SERVER: stack.baseUrl, FILESYNC_USERNAME: u.username, FILESYNC_PASSWORD: u.password, FILESYNC_DEVICE_NAME: device });
  const work = path.join(stack.dir, 'bench-client');
  const figures: Figure[] = [];
  const rows: string[][] = [];

  // 1. Many small files: the service's multipart rate, then the command's first sync of the same shape.
  const small = path.join(work, 'small');
  const folders = 10;
  for (let f = 0; f < folders; f++) await fs.mkdir(path.join(small, `d${f}`), { recursive: true });
  const names = Array.from({ length: smallCount }, (_, i) => `d${i % folders}/f${i}.bin`);
  await pool(names, 8, (n) => fs.writeFile(path.join(small, n), randomBytes(4096)));
  const up = sdk(ceilingUser);
  let t = process.hrtime.bigint();
  await pool(names, CONNECTIONS, async (n) => {
    await up.uploadFile({ content: await fs.readFile(path.join(small, n)), name: n.replace('/', '-') });
  });
  const ceilingRate = smallCount / (Number(process.hrtime.bigint() - t) / 1e9);
  log(`client: multipart ceiling ${fmt(ceilingRate)} files/s`);
  const first = await runCli(['sync', small, '--once'], envOf(cliUser, 'bench'));
  if (first.code !== 0) throw new Error(`first sync failed: ${first.out.slice(-500)}`);
  const firstRate = smallCount / (first.ms / 1000);
  figures.push(figure('client', `first sync of ${smallCount} files of 4 KiB`, 'throughput', 'files/s', 'rate', firstRate, [{ name: `POST /v1/files, ${CONNECTIONS} connections`, value: ceilingRate }]));
  rows.push([`first sync, ${smallCount} x 4 KiB`, `${fmt(firstRate)} files/s`, `${fmt(ceilingRate)} files/s`, fmt(firstRate / ceilingRate, 2), 'goal >= 0.7']);

  // 2. Nothing to do: the whole --once (start, sign-in from the journal, feed, scan) and its peak RSS.
  const noops = [];
  for (let i = 0; i < 3; i++) noops.push(await runCli(['sync', small, '--once'], envOf(cliUser, 'bench')));
  const noop = noops.sort((a, b) => a.ms - b.ms)[1]!;
  if (noop.out.trim() !== '') throw new Error(`a --once with nothing to do did something: ${noop.out.slice(0, 300)}`);
  const bare = await runCli(['--help'], {});
  figures.push(figure('client', `--once with nothing to do, ${smallCount} files`, 'time', 'ms', 'time', noop.ms, [{ name: 'the command printing --help', value: bare.ms }]));
  figures.push(figure('client', `--once peak RSS, ${smallCount} files`, 'peak RSS', 'MiB', 'size', noop.rss / 2 ** 20, [{ name: 'the command printing --help', value: bare.rss / 2 ** 20 }]));
  rows.push([`--once, nothing to do, ${smallCount} files`, `${fmt(noop.ms)} ms`, `--help: ${fmt(bare.ms)} ms`, '', 'goal <= 1500 ms']);
  rows.push([`peak RSS of that run`, `${fmt(noop.rss / 2 ** 20)} MiB`, `--help: ${fmt(bare.rss / 2 ** 20)} MiB`, '', 'goal < 150 MiB']);

  // 3. Large files: one multipart upload at a time, then the command (tus above 8 MiB), in alternate
  // rounds, each with fresh accounts, so that both see the same load on a shared machine.
  const big = path.join(work, 'big');
  await fs.mkdir(big, { recursive: true });
  for (let i = 0; i < bigCount; i++) await fs.writeFile(path.join(big, `big${i}.bin`), randomBytes(bigBytes));
  const bigRounds = quick ? 5 : 3;
  const bigMB = (bigCount * bigBytes) / MB;
  const ceilings: number[] = [];
  const rates: number[] = [];
  for (let r = 0; r < bigRounds; r++) {
    const [ceilUser, user] = (await provisionUsers(client, ctx.adminToken, [`cl-bigceil${r}`, `cl-big${r}`])) as [BenchUser, BenchUser];
    const bigSdk = sdk(ceilUser);
    t = process.hrtime.bigint();
    for (let i = 0; i < bigCount; i++) await bigSdk.uploadFile({ content: await openAsBlob(path.join(big, `big${i}.bin`)), name: `big${i}.bin` });
    ceilings.push(bigMB / (Number(process.hrtime.bigint() - t) / 1e9));
    await fs.rm(path.join(big, '.filesync'), { recursive: true, force: true });
    const bigRun = await runCli(['sync', big, '--once'], envOf(user, 'bench'));
    if (bigRun.code !== 0) throw new Error(`large sync failed: ${bigRun.out.slice(-500)}`);
    rates.push(bigMB / (bigRun.ms / 1000));
    log(`client: round ${r + 1}: ceiling ${fmt(ceilings[r]!)} MB/s, command ${fmt(rates[r]!)} MB/s`);
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const bigCeiling = median(ceilings);
  const bigRate = median(rates);
  const bigLabel = `${bigCount} files of ${fmt(bigBytes / 2 ** 20)} MiB`;
  figures.push(figure('client', `first sync of ${bigLabel}`, 'throughput', 'MB/s', 'rate', bigRate, [{ name: 'POST /v1/files, one at a time', value: bigCeiling }]));
  rows.push([`first sync, ${bigLabel}`, `${fmt(bigRate)} MB/s`, `${fmt(bigCeiling)} MB/s`, fmt(bigRate / bigCeiling, 2), `goal >= 0.8; medians of ${bigRounds} alternate rounds`]);

  // 4. Two watching devices: from a write on A to the same bytes on B.
  const [a, b] = [path.join(work, 'watch-a'), path.join(work, 'watch-b')];
  await fs.mkdir(a, { recursive: true });
  await fs.mkdir(b, { recursive: true });
  const watchers = [a, b].map((dir, i) => spawn(process.execPath, [CLI, 'sync', dir], { env: { ...process.env, ...envOf(watchUser, `w${i}`) }, stdio: 'ignore' }));
  const samples: number[] = [];
  try {
    await new Promise((r) => setTimeout(r, 3000));
    for (let i = 0; i < latencyReps; i++) {
      const body = randomBytes(64).toString('hex');
      const start = process.hrtime.bigint();
      await fs.writeFile(path.join(a, `live${i}.txt`), body);
      const target = path.join(b, `live${i}.txt`);
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline && !(existsSync(target) && (await fs.readFile(target, 'utf8')) === body)) await new Promise((r) => setTimeout(r, 20));
      samples.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  } finally {
    for (const w of watchers) w.kill('SIGTERM');
  }
  samples.sort((x, y) => x - y);
  const p50 = samples[Math.floor(samples.length / 2)]!;
  figures.push(figure('client', 'write on a watching device to the bytes on another', 'p50 latency', 'ms', 'time', p50));
  rows.push(['watching device A -> B', `p50 ${fmt(p50)} ms`, '', '', `max ${fmt(samples[samples.length - 1]!)} ms`]);
  await fs.rm(work, { recursive: true, force: true });

  return {
    name: 'client',
    title: 'The filesync command (a real process per run, the built clients/ package)',
    headers: ['case', 'client', 'ceiling', 'ratio', 'note'],
    rows,
    notes: [
      `Small files: the ceiling is POST /v1/files of the same files through the SDK, ${CONNECTIONS} at a time, as many as the command's uploads in flight; the command's time includes its start, device sign-in, the feed read, the scan and hashing.`,
      'Large files: the ceiling uploads the same files one at a time by multipart POST; the command sends files over 8 MiB by tus (one PATCH per file), 4 at a time; rounds alternate, each with fresh accounts, and the table gives the medians.',
      'Latency: both devices run `filesync sync DIR`; the write is seen by the watcher (400 ms debounce), uploaded, announced on the feed long poll of the other device, and downloaded.',
    ],
    figures,
    details: { latencySamplesMs: samples, noopRuns: noops.map((n) => n.ms), bigCeilingsMBs: ceilings, bigRatesMBs: rates },
  };
}
