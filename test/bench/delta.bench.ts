import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ContentChunker } from '../../shared/protocol/chunking';
import type { BenchContext } from './context';
import { deviceLink } from './delta.proxy';
import { provisionUsers, type BenchUser } from './http.client';
import { freePort, gatewayReady } from './stack';
import { figure, fmt, fmtBytes, type Figure, type ScenarioReport } from './stats';

/**
 * Changes that move only what changed (docs/SYNC-CLIENT.md, "Changes that move only what changed"):
 * for a large file in sync on two devices, 1 MiB written over the middle, 100 bytes inserted at the
 * start and 1 MiB appended, each synced by the editing device then the other through proxies that
 * count the body bytes each device sends and receives; the time of those two runs beside the first
 * whole upload and download of the same file. Each edit is synced at loopback speed, then again with
 * every device's link throttled (BENCH_DELTA_THROTTLE_MBIT, default 100 Mbit/s each way; 0: loopback
 * only), beside a whole upload and download over the same throttled link. Also the chunking's
 * throughput on one core beside SHA-256's. BENCH_DELTA_SIZES_MIB (e.g. `256,1024`) picks the file
 * sizes; BENCH_DELTA_CLI_PROF=<dir> writes a CPU profile of every run of the command there.
 */
const CLI = path.resolve(__dirname, '../../../clients/bin/filesync.js');
const MiB = 1024 * 1024;

function runCli(args: string[], env: Record<string, string>): Promise<{ ms: number; code: number | null; out: string }> {
  return new Promise((resolve) => {
    const t = process.hrtime.bigint();
    const prof = process.env.BENCH_DELTA_CLI_PROF;
    const nodeArgs = prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [];
    const child = spawn(process.execPath, [...nodeArgs, CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ ms: Number(process.hrtime.bigint() - t) / 1e6, code, out }));
  });
}

async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const piece of createReadStream(file, { highWaterMark: 4 * MiB })) hash.update(piece as Buffer);
  return hash.digest('hex');
}

async function randomFile(file: string, bytes: number): Promise<void> {
  const out = createWriteStream(file);
  for (let done = 0; done < bytes; done += 16 * MiB) {
    if (!out.write(randomBytes(Math.min(16 * MiB, bytes - done)))) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}

const EDITS: Array<{ name: string; apply: (file: string, size: number) => Promise<void> }> = [
  {
    name: '1 MiB over the middle',
    apply: async (file, size) => {
      const fd = await fs.open(file, 'r+');
      await fd.write(randomBytes(MiB), 0, MiB, Math.floor(size / 2) + 12_345);
      await fd.close();
    },
  },
  {
    name: '100 bytes inserted at the start',
    apply: async (file) => {
      const next = `${file}.next`;
      await fs.writeFile(next, randomBytes(100));
      await pipeline(createReadStream(file), createWriteStream(next, { flags: 'a' }));
      await fs.rename(next, file);
    },
  },
  { name: '1 MiB appended', apply: (file) => fs.appendFile(file, randomBytes(MiB)) },
];

/** Chunking and SHA-256 of the same bytes on one core, in MB/s. */
function chunkingRates(bytes: Buffer): { chunking: number; sha256: number } {
  const rate = (fn: () => void) => {
    fn();
    const t = process.hrtime.bigint();
    fn();
    return bytes.length / 1e6 / (Number(process.hrtime.bigint() - t) / 1e9);
  };
  return {
    chunking: rate(() => {
      const c = new ContentChunker();
      for (let i = 0; i < bytes.length; i += MiB) c.update(bytes.subarray(i, i + MiB));
      c.finish();
    }),
    sha256: rate(() => createHash('sha256').update(bytes).digest()),
  };
}

export async function runDelta(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const sizes = process.env.BENCH_DELTA_SIZES_MIB?.split(',').map((m) => Number(m) * MiB) ?? (profile.name === 'quick' ? [64 * MiB] : [256 * MiB, 1024 * MiB]);
  const mbit = Number(process.env.BENCH_DELTA_THROTTLE_MBIT ?? 100);
  const throttled = (mbit * 1e6) / 8;
  const figures: Figure[] = [];
  const rows: string[][] = [];
  const details: Record<string, unknown> = {};

  const rates = chunkingRates(randomBytes(profile.name === 'quick' ? 64 * MiB : 256 * MiB));
  rows.push(['chunking (FastCDC, SHA-256 per chunk), one core', '', `${fmt(rates.chunking)} MB/s`, '', '', '', `SHA-256 alone ${fmt(rates.sha256)} MB/s`, '', '']);
  figures.push(figure('delta', 'chunking on one core', 'throughput', 'MB/s', 'rate', rates.chunking, [{ name: 'SHA-256 on one core', value: rates.sha256 }]));

  // A gateway of its own on the same database and store, whose upload limit takes the largest file.
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const gateway = await stack.launch('gateway', 'delta-gateway', { PORT: String(port), MAX_UPLOAD_BYTES: String(4 * 1024 * MiB) }, () => gatewayReady(baseUrl));
  const work = path.join(stack.dir, 'bench-delta');
  /** Two devices of a user of their own, each behind its own link. */
  const pair = async (name: string) => {
    const [user] = (await provisionUsers(client, ctx.adminToken, [name])) as [BenchUser];
    const links = [await deviceLink(new URL(baseUrl)), await deviceLink(new URL(baseUrl))];
    const dirs = [path.join(work, `${name}-a`), path.join(work, `${name}-b`)];
    for (const d of dirs) await fs.mkdir(d, { recursive: true });
    const envOf = (i: number) => ({ FILESYNC_SERVER: links[i]!.url, FILESYNC_USERNAME: user.username, FILESYNC_PASSWORD: user.password, FILESYNC_DEVICE_NAME: `dev${i}` });
    const once = async (i: number) => {
      const run = await runCli(['sync', dirs[i]!, '--once'], envOf(i));
      if (run.code !== 0) throw new Error(`sync failed: ${run.out.slice(-500)}`);
      return run;
    };
    const file = (i: number) => path.join(dirs[i]!, 'disk.img');
    return { links, once, file, close: async () => Promise.all(links.map((l) => l.close())) };
  };
  try {
    // The whole transfer over the throttled link, of a smaller file when the sizes are large: its time
    // is then scaled by size (at 12.5 MB/s the per-run costs are a small part of it).
    let wholeThrottled: { bytes: number; ms: number } | undefined;
    if (throttled) {
      const bytes = Math.min(...sizes, profile.name === 'quick' ? 64 * MiB : 256 * MiB);
      const p = await pair(`whole${bytes / MiB}`);
      for (const l of p.links) l.throttle(throttled);
      await randomFile(p.file(0), bytes);
      wholeThrottled = { bytes, ms: (await p.once(0)).ms + (await p.once(1)).ms };
      await p.close();
      log(`delta: ${fmtBytes(bytes)} whole upload + download at ${mbit} Mbit/s ${fmt(wholeThrottled.ms)} ms`);
      details[`whole ${fmtBytes(bytes)} at ${mbit} Mbit/s`] = wholeThrottled;
    }
    for (const size of sizes) {
      const label = fmtBytes(size);
      const p = await pair(`delta${size / MiB}`);
      await randomFile(p.file(0), size);
      const wholeMs = (await p.once(0)).ms + (await p.once(1)).ms;
      log(`delta: ${label} whole upload + download ${fmt(wholeMs)} ms`);
      const modes = [{ name: 'loopback', rate: 0, wholeMs, scaled: false }];
      if (wholeThrottled) modes.push({ name: `${mbit} Mbit/s`, rate: throttled, wholeMs: (wholeThrottled.ms * size) / wholeThrottled.bytes, scaled: wholeThrottled.bytes !== size });
      for (const mode of modes) {
        for (const l of p.links) l.throttle(mode.rate);
        for (const edit of EDITS) {
          await edit.apply(p.file(0), (await fs.stat(p.file(0))).size);
          for (const l of p.links) l.counts.sent = l.counts.received = 0;
          const up = await p.once(0);
          const down = await p.once(1);
          const same = (await sha256File(p.file(0))) === (await sha256File(p.file(1)));
          if (!same) throw new Error(`${label}, ${edit.name}: the devices hold different bytes`);
          const counted = p.links.map((l) => ({ ...l.counts }));
          const ms = up.ms + down.ms;
          const name = `${label}: ${edit.name}`;
          details[`${name}, ${mode.name}`] = { counted, upMs: up.ms, downMs: down.ms, wholeMs: mode.wholeMs };
          const worst = Math.max(...counted.flatMap((c) => [c.sent, c.received]));
          rows.push([
            name,
            mode.name,
            fmtBytes(counted[0]!.sent),
            fmtBytes(counted[0]!.received),
            fmtBytes(counted[1]!.sent),
            fmtBytes(counted[1]!.received),
            `${fmt(up.ms)} + ${fmt(down.ms)} ms`,
            `${fmt(mode.wholeMs)} ms${mode.scaled ? ' (scaled)' : ''}`,
            `${fmt(ms / mode.wholeMs, 3)}; bytes ${worst <= 8 * MiB ? '<=' : '>'} 8 MiB`,
          ]);
          if (mode.rate === 0) figures.push(figure('delta', name, 'most bytes one device moved', 'MiB', 'size', worst / MiB, [{ name: 'the file', value: size / MiB }]));
          figures.push(figure('delta', `${name}, ${mode.name}`, 'sync A then B', 'ms', 'time', ms, [{ name: 'whole upload then download', value: mode.wholeMs }]));
          log(`delta: ${name}, ${mode.name}: ${JSON.stringify(counted)} in ${fmt(up.ms)} + ${fmt(down.ms)} ms`);
        }
      }
      await p.close();
      await fs.rm(work, { recursive: true, force: true });
    }
  } finally {
    await gateway.stop();
    await fs.rm(work, { recursive: true, force: true });
  }
  return {
    name: 'delta',
    title: 'Changes that move only what changed (the filesync command on two devices)',
    headers: ['case', 'link', 'A sends', 'A receives', 'B sends', 'B receives', 'A then B', 'whole A then B', 'ratio; CLIENT.md guarantee 8'],
    rows,
    notes: [
      'Bytes are the request and response bodies each device moved through its own counting proxy for the edit (sync of the editing device A, then of B).',
      'The whole column is a first sync: a tus upload from A and a download to B. At loopback speed it is the same file\'s; over the throttled link (a token bucket per direction in each device\'s proxy) it is measured once, on the smallest size (at most 256 MiB), and scaled by size where marked.',
      'Every run ends with both devices holding the same bytes (checked).',
    ],
    figures,
    details,
  };
}
