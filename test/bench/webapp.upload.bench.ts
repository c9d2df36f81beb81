/**
 * `--only=webapp-upload`: a 1 GiB file uploaded through the web app in headless Chromium (the file
 * input, the app's own tus options) next to tus-js-client in Node with the same chunk size against the
 * same gateway, alternating. Each upload is timed from choosing the file until the API lists it with
 * the right size and SHA-256. The file is made in a temporary folder and removed afterwards.
 */
import { createHash } from 'node:crypto';
import { createReadStream, readdirSync, readFileSync, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { Upload } from 'tus-js-client';
import { launchBrowser, signInThroughForm } from '../webapp/browser';
import type { BenchContext } from './context';
import { HttpClient, login } from './http.client';
import { freePort, gatewayReady } from './stack';
import { figure, fmt, fmtRatio, msSince, now, summarize, type ScenarioReport } from './stats';
import { writeRandomFile } from './transfer.plain';

const MB = 1e6;
const MiB = 1024 * 1024;
/** The app's tus chunk size (services/gateway/webapp/ui/uploads.js), given to the Node client too. */
export const APP_CHUNK = 64 * MiB;
const USER = { username: 'webapp-upload', password: 'webapp-upload-password-1' };

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 4 * MiB })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Resolves once a search lists `name` with `size` bytes; fails when its digest is not `sha256`. */
async function committed(client: HttpClient, token: string, name: string, size: number, sha256: string, timeoutMs = Number(process.env.BENCH_UPLOAD_TIMEOUT_MS ?? 600_000)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const res = await client.json<{ items: Array<{ name: string; size: number; sha256: string }> }>('GET', `/v1/files/search?q=${encodeURIComponent(name)}`, undefined, token);
    const item = res.body?.items?.find((i) => i.name === name);
    if (item && item.size === size) {
      if (item.sha256 !== sha256) throw new Error(`${name}: committed with sha256 ${item.sha256}, expected ${sha256}`);
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} was not committed within ${timeoutMs} ms`);
}

const TICK_MS = 10;

/** Chromium's processes by their part: the browser (which reads a file sent as a Blob), the network service, the page, the rest. */
type ChromiumPart = 'browser' | 'network' | 'renderer' | 'other';

function partOf(pid: number): ChromiumPart {
  let cmdline = '';
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return 'other';
  }
  if (!cmdline.includes('--type=')) return 'browser';
  if (cmdline.includes('--type=renderer')) return 'renderer';
  if (cmdline.includes('network.mojom.NetworkService')) return 'network';
  return 'other';
}

/** CPU ms used so far by every Chromium process started from this one, by part (Linux /proc; 0 elsewhere). */
function chromiumCpuMs(): Record<ChromiumPart, number> {
  const procs = new Map<number, { ppid: number; comm: string; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      procs.set(Number(entry), { ppid: Number(f[1]), comm, ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // Gone in between.
    }
  }
  const ours = (pid: number): boolean => {
    for (let p = procs.get(pid)?.ppid; p && p > 1; p = procs.get(p)?.ppid) if (p === process.pid) return true;
    return false;
  };
  const ms: Record<ChromiumPart, number> = { browser: 0, network: 0, renderer: 0, other: 0 };
  for (const [pid, info] of procs) if (info.comm.startsWith('chromium') && ours(pid)) ms[partOf(pid)] += info.ticks * TICK_MS;
  return ms;
}

const total = (ms: Record<ChromiumPart, number>): number => ms.browser + ms.network + ms.renderer + ms.other;

/** CPU ms one process has used so far. */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
}

/** tus-js-client in Node, reading the file from disk, as a script or a sync tool would. */
function nodeUpload(baseUrl: string, token: string, file: string, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const upload = new Upload(createReadStream(file), {
      endpoint: `${baseUrl}/v1/uploads`,
      headers: { authorization: `Bearer ${token}` },
      metadata: { name },
      chunkSize: APP_CHUNK,
      retryDelays: [],
      onSuccess: () => resolve(),
      onError: reject,
    });
    upload.start();
  });
}

/** A fresh page per upload: nothing left over from the previous one (its panel, its tus state). */
async function freshPage(page: Page): Promise<void> {
  await page.goto('/');
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

export async function runWebAppUpload(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, log } = ctx;
  const bytes = ctx.profile.name === 'full' ? 1024 * MiB : 256 * MiB;
  const label = `${bytes / MiB} MiB`;
  const reps = ctx.profile.name === 'full' ? 3 : 2;
  const created = await ctx.client.json('POST', '/v1/users', USER, ctx.adminToken);
  if (created.status !== 201) throw new Error(`user creation failed: ${created.status} ${created.text}`);
  // A gateway of its own on the same database and store, whose upload limit takes the file.
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const gateway = await stack.launch('gateway', 'webapp-upload-gateway', { PORT: String(port), MAX_UPLOAD_BYTES: String(2 * bytes) }, () => gatewayReady(baseUrl));
  const client = new HttpClient(baseUrl);
  const { token } = await login(client, USER.username, USER.password);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'filesync-bench-upload-'));
  let browser: Browser | undefined;
  const inBrowser: number[] = [];
  const inNode: number[] = [];
  /** CPU ms per upload: the client's (Chromium's processes, or this process for Node) and the gateway's. */
  const cpu = { browser: [] as Array<{ client: number; gateway: number }>, node: [] as Array<{ client: number; gateway: number }> };
  const chromiumParts: Array<Record<ChromiumPart, number>> = [];
  const loads: number[] = [];
  try {
    const file = path.join(dir, 'source.bin');
    await writeRandomFile(file, bytes);
    const sha256 = await sha256Of(file);
    browser = await launchBrowser();
    const context = await browser.newContext({ baseURL: baseUrl });
    const page = await context.newPage();
    page.setDefaultTimeout(60_000);
    page.on('requestfailed', (r) => r.url().includes('/v1/uploads') && log(`webapp-upload: request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText ?? ''}`));
    await signInThroughForm(page, USER.username, USER.password);
    for (let rep = 0; rep < reps; rep++) {
      // Alternating, and which goes first alternates too, so neither always meets a warmer disk cache.
      const order = rep % 2 === 0 ? (['browser', 'node'] as const) : (['node', 'browser'] as const);
      for (const who of order) {
        const name = `${who}-${rep + 1}.bin`;
        // The browser names the upload after the file it was given: a link under that name.
        const named = path.join(dir, name);
        await fs.link(file, named);
        if (who === 'browser') await freshPage(page);
        const cpuBefore = { chromium: chromiumCpuMs(), node: process.cpuUsage(), gateway: processCpuMs(gateway.child.pid!) };
        const t = now();
        if (who === 'browser') await page.getByLabel('Upload files').setInputFiles(named);
        else await nodeUpload(baseUrl, token, named, name);
        await committed(client, token, name, bytes, sha256).catch(async (err: Error) => {
          const panel = who === 'browser' ? await page.getByRole('region', { name: 'Uploads' }).textContent({ timeout: 1000 }).catch(() => '') : '';
          throw new Error(`${err.message}${panel ? `; the upload panel says: ${panel}` : ''}`);
        });
        const ms = msSince(t);
        const nodeMs = (({ user, system }) => (user + system) / 1000)(process.cpuUsage(cpuBefore.node));
        const chromium = chromiumCpuMs();
        const parts = Object.fromEntries(Object.entries(chromium).map(([k, v]) => [k, v - cpuBefore.chromium[k as ChromiumPart]])) as Record<ChromiumPart, number>;
        const gatewayMs = processCpuMs(gateway.child.pid!) - cpuBefore.gateway;
        if (who === 'browser') {
          cpu.browser.push({ client: total(parts), gateway: gatewayMs });
          chromiumParts.push(parts);
        } else cpu.node.push({ client: nodeMs, gateway: gatewayMs });
        loads.push(os.loadavg()[0]!);
        await fs.rm(named, { force: true });
        (who === 'browser' ? inBrowser : inNode).push(ms);
        const cpuNote = who === 'browser' ? `Chromium CPU ${Object.entries(chromiumParts[chromiumParts.length - 1]!).map(([k, v]) => `${k} ${fmt(v / 1000)}`).join(', ')} s` : `Node CPU ${fmt(nodeMs / 1000)} s`;
        log(`webapp-upload: ${name}: ${fmt(ms / 1000)} s, ${fmt(bytes / MB / (ms / 1000))} MB/s; ${cpuNote}, gateway ${fmt(gatewayMs / 1000)} s; load ${os.loadavg()[0]!.toFixed(2)}`);
      }
    }
    await context.close();
  } finally {
    await browser?.close().catch(() => undefined);
    client.close();
    await gateway.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
  const median = (xs: number[]) => summarize(xs).p50 / 1000;
  const cpuText = (xs: Array<{ client: number; gateway: number }>) => `${fmt(median(xs.map((x) => x.client)))} / ${fmt(median(xs.map((x) => x.gateway)))}`;
  const rate = (ms: number[]) => (bytes * ms.length) / MB / (ms.reduce((a, b) => a + b, 0) / 1000);
  const web = rate(inBrowser);
  const ceiling = rate(inNode);
  const ceilingName = `tus-js-client in Node, ${APP_CHUNK / MiB} MiB chunks`;
  const row = (who: string, value: number, ms: number[]) => [label, who, String(ms.length), fmt(value), fmt(summarize(ms).p50 / 1000), fmt(ceiling), fmtRatio(value, ceiling, 'rate')];
  return {
    name: 'webapp-upload',
    title: `Web app upload of ${label} in Chromium (MB/s = 10^6 bytes/s, from choosing the file until the API lists it)`,
    headers: ['size', 'client', 'reps', 'MB/s', 'p50 s', 'Node MB/s', 'of Node'],
    rows: [row('web app in Chromium', web, inBrowser), row(ceilingName, ceiling, inNode)],
    notes: [
      `Both send the same file on disk to the same gateway through POST /v1/uploads and ${APP_CHUNK / MiB} MiB PATCHes, alternating; done when GET /v1/files/search lists the file with its size and SHA-256.`,
      `CPU per upload, client / gateway: Chromium ${cpuText(cpu.browser)}, Node ${cpuText(cpu.node)} (seconds, median); Chromium's by process (median s): ${(['browser', 'network', 'renderer', 'other'] as const).map((k) => `${k} ${fmt(median(chromiumParts.map((p) => p[k])))}`).join(', ')}.`,
      `Load average (1 min) after each upload: ${loads.map((l) => l.toFixed(2)).join(', ')}.`,
      'The browser upload goes through the Upload files input (setInputFiles with the path), the page loaded afresh and signed in; the Node one streams the file with tus-js-client.',
    ],
    figures: [figure('webapp-upload', `upload ${label} through the web app`, 'throughput', 'MB/s', 'rate', web, [{ name: ceilingName, value: ceiling }])],
    details: { browserMs: inBrowser, nodeMs: inNode, cpuMs: cpu, chromiumCpuMs: chromiumParts, loads },
  };
}
