import { randomBytes } from 'node:crypto';
import type { HttpClient } from './http.client';
import { memoryOf, resetPeakMemory } from './stack';
import { msSince, now } from './stats';

const MB = 1e6;

/* What the share-link cases have in common: request bodies, timed reads, rates, peak memory. */

/** A multipart body held in memory (small files): text fields, then the part `file`. */
export function smallMultipart(name: string, content: Buffer, fields: Record<string, string> = {}): { body: Buffer; headers: Record<string, string> } {
  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const body = Buffer.concat([
    ...Object.entries(fields).map(([k, v]) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    content,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

export async function must(client: HttpClient, method: string, url: string, token: string | undefined, body?: unknown): Promise<any> {
  const res = await client.json(method, url, body, token);
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${res.text.slice(0, 300)}`);
  return res.body;
}

/** Times `get` and reads its whole body; throws unless it is a 200 of `bytes`. */
export async function timedGet(client: HttpClient, url: string, headers: Record<string, string>, bytes: number): Promise<number> {
  const t = now();
  const res = await client.request('GET', url, { headers, discardBody: true });
  const ms = msSince(t);
  if (res.status !== 200 || (bytes >= 0 && res.bytes !== bytes)) throw new Error(`GET ${url}: ${res.status}, ${res.bytes} bytes`);
  return ms;
}

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
/**
 * MB/s of a median transfer. One transfer of 100 MB on this kind of host swings by 2x from one rep to
 * the next (pages the hypervisor backs on first touch, a neighbour's burst): a mean lets one slow
 * rep decide a 5% goal, a median of many reps does not.
 */
export const rateOf = (bytes: number, ms: number[]) => bytes / MB / (median(ms) / 1000);

/** Peak resident memory of `pid` while `work` runs: VmHWM after a reset, and VmRSS sampled every 5 ms. */
export async function peakRss(pid: number, work: () => Promise<void>): Promise<{ rest: number; peak: number }> {
  await new Promise((r) => setTimeout(r, 300));
  const rest = (await memoryOf(pid)).rss;
  const reset = await resetPeakMemory(pid);
  let peak = rest;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, (await memoryOf(pid)).rss);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  try {
    await work();
  } finally {
    sampling = false;
    await sampler;
  }
  const after = await memoryOf(pid);
  return { rest, peak: Math.max(peak, reset ? after.hwm : 0) };
}

