/**
 * `--only=thumbnails`: 1,000 small photographs uploaded (POST /v1/files, four at a time as the web app
 * sends them) with the workers making their thumbnails, beside the same uploads with the thumbnail
 * queue paused, alternating. Reports both upload rates, their ratio (the goal: at least 0.9) and the
 * time until every image of the run has its thumbnails.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import sharp from 'sharp';
import { openThumbnailQueue } from '../../shared/queue/thumbnail.contract';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser } from './http.client';
import { REDIS_URL } from './stack';
import { figure, fmt, fmtRatio, type ScenarioReport } from './stats';

/** Uploads in flight at once: the web app's own number (services/gateway/webapp/ui/uploads.js). */
const PARALLEL = 4;

interface Image {
  name: string;
  bytes: Buffer;
  sha256: string;
}

/** A photograph-like 1280x960 field (smooth shapes with grain) that every image is cut from; made here, nothing downloaded. */
function field(width = 1280, height = 960): { raw: Buffer; width: number; height: number } {
  const raw = Buffer.alloc(width * height * 3);
  let s = 7;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      s = (s * 1103515245 + 12345) & 0x7fffffff;
      const grain = s >> 27;
      const i = (y * width + x) * 3;
      raw[i] = (128 + 100 * Math.sin(x / 90) * Math.cos(y / 70) + grain) & 255;
      raw[i + 1] = ((x * 255) / width + grain) & 255;
      raw[i + 2] = ((y * 255) / height + 40 * Math.sin((x + y) / 40) + grain) & 255;
    }
  }
  return { raw, width, height };
}

/** A 640x480 (every third one 480x640) JPEG: a window of the field at its own place and colours, so no two are alike. */
async function photo(source: ReturnType<typeof field>, seed: number): Promise<Buffer> {
  const [width, height] = seed % 3 === 0 ? [480, 640] : [640, 480];
  const left = (seed * 37) % (source.width - width);
  const top = (seed * 53) % (source.height - height);
  return sharp(source.raw, { raw: { width: source.width, height: source.height, channels: 3 } })
    .extract({ left, top, width, height })
    .linear([0.7 + (seed % 31) / 100, 0.7 + (seed % 37) / 100, 0.7 + (seed % 41) / 100], [seed % 23, seed % 29, seed % 19])
    .jpeg({ quality: 85 })
    .toBuffer();
}

async function images(source: ReturnType<typeof field>, from: number, count: number): Promise<Image[]> {
  const out: Image[] = [];
  for (let i = from; i < from + count; i++) {
    const bytes = await photo(source, i);
    out.push({ name: `photo-${String(i).padStart(5, '0')}.jpg`, bytes, sha256: createHash('sha256').update(bytes).digest('hex') });
  }
  return out;
}

/**
 * CPU ms a process's threads and its children's have used so far, those at nice 19 (the image work) apart from the rest
 * (the job's queue, database and store calls, and sharp's own threads), which compete with uploads.
 */
function cpuByPriority(pid: number): { low: number; normal: number } {
  const out = { low: 0, normal: 0 };
  const fields = (file: string) => {
    const stat = readFileSync(file, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  };
  // The worker and its children (the process its images are made in, shared/thumbnails/image.process.ts).
  const pids = [pid];
  for (const entry of readdirSync('/proc')) {
    try {
      if (/^\d+$/.test(entry) && Number(fields(`/proc/${entry}/stat`)[1]) === pid) pids.push(Number(entry));
    } catch {
      // Gone in between.
    }
  }
  for (const p of pids) {
    for (const tid of readdirSync(`/proc/${p}/task`)) {
      try {
        const f = fields(`/proc/${p}/task/${tid}/stat`);
        out[Number(f[16]) > 0 ? 'low' : 'normal'] += (Number(f[11]) + Number(f[12])) * 10;
      } catch {
        // The thread ended in between.
      }
    }
  }
  return out;
}

/** Uploads every image, PARALLEL at a time, as the web app does; resolves with the elapsed ms. */
async function upload(baseUrl: string, token: string, batch: Image[]): Promise<number> {
  let next = 0;
  const send = async () => {
    while (next < batch.length) {
      const image = batch[next++]!;
      const form = new FormData();
      form.append('file', new Blob([image.bytes], { type: 'image/jpeg' }), image.name);
      const res = await fetch(`${baseUrl}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
      if (res.status !== 201) throw new Error(`upload of ${image.name} failed: ${res.status} ${(await res.text()).slice(0, 300)}`);
      await res.arrayBuffer();
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: PARALLEL }, send));
  return performance.now() - started;
}

export async function runThumbnails(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, log } = ctx;
  const count = ctx.profile.name === 'full' ? 1000 : 200;
  const reps = ctx.profile.name === 'full' ? 3 : 2;
  const [user] = (await provisionUsers(client, ctx.adminToken, ['thumbnails'])) as [BenchUser];
  const queue = openThumbnailQueue({ redisUrl: REDIS_URL }, stack.queuePrefix);
  const ready = async (batch: Image[]) => {
    const row = (await stack.db('content_thumbnails')
      .whereIn('content_sha256', batch.map((i) => i.sha256))
      .where({ state: 'ready' })
      .count({ n: '*' })
      .first()) as { n: number | string };
    return Number(row.n);
  };
  /** Until every image of `batch` has its thumbnails; the ms since `started`. */
  const allMade = async (batch: Image[], started: number, timeoutMs = 1_800_000) => {
    while ((await ready(batch)) < batch.length) {
      if (performance.now() - started > timeoutMs) throw new Error(`thumbnails: ${await ready(batch)} of ${batch.length} made after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
    return performance.now() - started;
  };

  const withWorker: number[] = [];
  const paused: number[] = [];
  const allThumbs: number[] = [];
  const loads: string[] = [];
  /** The worker's CPU ms per image in each running run, at nice 19 and at its own priority. */
  const workerCpu: Array<{ low: number; normal: number }> = [];
  try {
    log(`thumbnails: making ${Math.min(300, count) + 2 * reps * count} photographs`);
    const source = field();
    const warm = await images(source, 0, Math.min(300, count));
    const sets: Image[][] = [];
    for (let r = 0; r < 2 * reps; r++) sets.push(await images(source, (r + 1) * count + 300, count));
    const distinct = new Set([...warm, ...sets.flat()].map((i) => i.sha256)).size;
    if (distinct !== warm.length + 2 * reps * count) throw new Error(`thumbnails: only ${distinct} distinct images`);
    // Warm-up: the gateway's and worker's code paths hot, the queue's worker seen running.
    const t0 = performance.now();
    await upload(stack.baseUrl, user.token, warm);
    await allMade(warm, t0);
    for (let r = 0; r < 2 * reps; r++) {
      const batch = sets[r]!;
      // Paused, running, running, paused, ...: a drift over the run weighs on both sides alike.
      const running = r % 4 === 1 || r % 4 === 2;
      if (!running) await queue.pause();
      const cpuBefore = cpuByPriority(stack.worker!.child.pid!);
      const started = performance.now();
      const ms = await upload(stack.baseUrl, user.token, batch);
      if (running) {
        withWorker.push(ms);
        allThumbs.push(await allMade(batch, started));
        const cpu = cpuByPriority(stack.worker!.child.pid!);
        workerCpu.push({ low: (cpu.low - cpuBefore.low) / count, normal: (cpu.normal - cpuBefore.normal) / count });
      } else {
        paused.push(ms);
        // Jobs of the paused run are dropped, so none of them runs beside the next measurement.
        await queue.drain();
        await queue.resume();
      }
      loads.push(os.loadavg()[0]!.toFixed(2));
      log(`thumbnails: ${running ? 'worker running' : 'queue paused'}: ${count} uploads in ${fmt(ms / 1000)} s (${fmt((count * 1000) / ms)}/s)${running ? `, all thumbnails after ${fmt(allThumbs[allThumbs.length - 1]! / 1000)} s, worker CPU per image ${fmt(workerCpu[workerCpu.length - 1]!.low)} ms at nice 19 + ${fmt(workerCpu[workerCpu.length - 1]!.normal)} ms at its own priority` : ''}; load ${loads[loads.length - 1]}`);
    }
  } finally {
    await queue.resume().catch(() => undefined);
    await queue.close();
  }
  const rate = (ms: number[]) => (count * ms.length * 1000) / ms.reduce((a, b) => a + b, 0);
  const on = rate(withWorker);
  const off = rate(paused);
  const meanThumbS = allThumbs.reduce((a, b) => a + b, 0) / allThumbs.length / 1000;
  const ceilingName = 'the same uploads with the thumbnail queue paused';
  return {
    name: 'thumbnails',
    title: `Thumbnails of ${fmt(count, 0)} uploaded photographs (640x480 JPEG), uploads ${PARALLEL} at a time`,
    headers: ['run', 'reps', 'uploads/s', 'of paused', 'all thumbnails made after s'],
    rows: [
      ['thumbnail worker running', String(withWorker.length), fmt(on), fmtRatio(on, off, 'rate'), allThumbs.map((ms) => fmt(ms / 1000)).join(', ')],
      ['thumbnail queue paused', String(paused.length), fmt(off), '100%', ''],
    ],
    notes: [
      `Each run uploads ${count} new images through POST /v1/files (multipart, ${PARALLEL} in flight), in the order paused, running, running, paused, ... after 300 warm-up uploads; a paused run's jobs are dropped before the next run, and a running run ends once every image has its thumbnails (time from its first upload).`,
      `Load average (1 min) after each run: ${loads.join(', ')}.`,
      `The worker's CPU per image, running runs (ms at nice 19 + ms at its own priority): ${workerCpu.map((c) => `${fmt(c.low)} + ${fmt(c.normal)}`).join(', ')}.`,
    ],
    figures: [
      figure('thumbnails', `upload ${count} photographs with thumbnails being made`, 'throughput', 'uploads/s', 'rate', on, [{ name: ceilingName, value: off }]),
      figure('thumbnails', `all ${count} thumbnails made`, 'time', 's', 'time', meanThumbS),
    ],
    details: { withWorkerMs: withWorker, pausedMs: paused, allThumbnailsMs: allThumbs, loads, workerCpuMsPerImage: workerCpu },
  };
}
