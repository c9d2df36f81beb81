import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, promises as fs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ContentChunker } from '../../shared/protocol/chunking';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser } from './http.client';
import { freePort, gatewayReady } from './stack';
import { figure, fmt, fmtBytes, type Figure, type ScenarioReport } from './stats';

/**
 * Changes that move only what changed (docs/SYNC-CLIENT.md section 12): for a large file in sync on
 * two devices, 1 MiB written over the middle, 100 bytes inserted at the start and 1 MiB appended,
 * each synced by the editing device then the other through proxies that count the body bytes each
 * device sends and receives; the time of those two runs beside the first whole upload and download
 * of the same file. Also the chunking's throughput on one core beside SHA-256's.
 */
const CLI = path.resolve(__dirname, '../../../clients/bin/filesync.js');
const MiB = 1024 * 1024;

function runCli(args: string[], env: Record<string, string>): Promise<{ ms: number; code: number | null; out: string }> {
  return new Promise((resolve) => {
    const t = process.hrtime.bigint();
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ ms: Number(process.hrtime.bigint() - t) / 1e6, code, out }));
  });
}

async function countingProxy(target: URL) {
  const counts = { sent: 0, received: 0 };
  const server = http.createServer((req, res) => {
    req.on('data', (d: Buffer) => (counts.sent += d.length));
    const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      up.on('data', (d: Buffer) => (counts.received += d.length));
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, counts, close: () => new Promise((r) => server.close(r)) };
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
  const sizes = profile.name === 'quick' ? [64 * MiB] : [256 * MiB, 1024 * MiB];
  const figures: Figure[] = [];
  const rows: string[][] = [];
  const details: Record<string, unknown> = {};

  const rates = chunkingRates(randomBytes(profile.name === 'quick' ? 64 * MiB : 256 * MiB));
  rows.push(['chunking (FastCDC, SHA-256 per chunk), one core', `${fmt(rates.chunking)} MB/s`, '', '', '', `SHA-256 alone ${fmt(rates.sha256)} MB/s`, '', '']);
  figures.push(figure('delta', 'chunking on one core', 'throughput', 'MB/s', 'rate', rates.chunking, [{ name: 'SHA-256 on one core', value: rates.sha256 }]));

  // A gateway of its own on the same database and store, whose upload limit takes the largest file.
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const gateway = await stack.launch('gateway', 'delta-gateway', { PORT: String(port), MAX_UPLOAD_BYTES: String(4 * 1024 * MiB) }, () => gatewayReady(baseUrl));
  const work = path.join(stack.dir, 'bench-delta');
  try {
    for (const size of sizes) {
      const label = fmtBytes(size);
      const [user] = (await provisionUsers(client, ctx.adminToken, [`delta${size / MiB}`])) as [BenchUser];
      const proxies = [await countingProxy(new URL(baseUrl)), await countingProxy(new URL(baseUrl))];
      const dirs = [path.join(work, `${size}-a`), path.join(work, `${size}-b`)];
      for (const d of dirs) await fs.mkdir(d, { recursive: true });
      const envOf = (i: number) => ({ FILESYNC_SERVER: proxies[i]!.url, FILESYNC_USERNAME: user.username, FILESYNC_PASSWORD: user.password, FILESYNC_DEVICE_NAME: `dev${i}` });
      const once = async (i: number) => {
        const run = await runCli(['sync', dirs[i]!, '--once'], envOf(i));
        if (run.code !== 0) throw new Error(`sync failed: ${run.out.slice(-500)}`);
        return run;
      };
      const file = (i: number) => path.join(dirs[i]!, 'disk.img');
      await randomFile(file(0), size);
      const wholeMs = (await once(0)).ms + (await once(1)).ms;
      log(`delta: ${label} whole upload + download ${fmt(wholeMs)} ms`);
      for (const edit of EDITS) {
        await edit.apply(file(0), (await fs.stat(file(0))).size);
        for (const p of proxies) p.counts.sent = p.counts.received = 0;
        const up = await once(0);
        const down = await once(1);
        const same = (await sha256File(file(0))) === (await sha256File(file(1)));
        if (!same) throw new Error(`${label}, ${edit.name}: the devices hold different bytes`);
        const counted = proxies.map((p) => ({ ...p.counts }));
        const ms = up.ms + down.ms;
        details[`${label} ${edit.name}`] = { counted, upMs: up.ms, downMs: down.ms, wholeMs };
        const worst = Math.max(...counted.flatMap((c) => [c.sent, c.received]));
        rows.push([
          `${label}: ${edit.name}`,
          fmtBytes(counted[0]!.sent),
          fmtBytes(counted[0]!.received),
          fmtBytes(counted[1]!.sent),
          fmtBytes(counted[1]!.received),
          `${fmt(ms)} ms`,
          `${fmt(wholeMs)} ms`,
          `${fmt(ms / wholeMs, 2)}; bytes ${worst <= 8 * MiB ? '<=' : '>'} 8 MiB`,
        ]);
        figures.push(figure('delta', `${label}: ${edit.name}`, 'most bytes one device moved', 'MiB', 'size', worst / MiB, [{ name: 'the file', value: size / MiB }]));
        figures.push(figure('delta', `${label}: ${edit.name}`, 'sync A then B', 'ms', 'time', ms, [{ name: 'whole upload then download', value: wholeMs }]));
        log(`delta: ${label} ${edit.name}: ${JSON.stringify(counted)} in ${fmt(ms)} ms`);
      }
      for (const p of proxies) await p.close();
      await fs.rm(work, { recursive: true, force: true });
    }
  } finally {
    await gateway.stop();
    await fs.rm(work, { recursive: true, force: true });
  }
  return {
    name: 'delta',
    title: 'Changes that move only what changed (the filesync command on two devices, loopback)',
    headers: ['case', 'A sends', 'A receives', 'B sends', 'B receives', 'A then B', 'whole A then B', 'ratio; CLIENT.md guarantee 8'],
    rows,
    notes: [
      'Bytes are the request and response bodies each device moved through its own counting proxy for the edit (sync of the editing device A, then of B).',
      'The whole column is the first sync of the same file: a tus upload from A and a download to B. Every run ends with both devices holding the same bytes (checked).',
      'Not measured here yet: a 100 Mbit/s throttled link and Syncthing side by side.',
    ],
    figures,
    details,
  };
}
