import { randomBytes } from 'node:crypto';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { HttpClient } from './http.client';
import { figure, fmt, summarize, type Figure } from './stats';

const MiB = 1024 * 1024;

export interface RedirectRun {
  /** A client of a service with S3_DOWNLOADS=redirect, and a token on it. */
  client: HttpClient;
  token: string;
  /** The SDK straight to the store, and an object of `size` bytes it reads. */
  sdk: S3Client;
  bucket: string;
  directKey: string;
  size: number;
  reps: number;
  /** CPU seconds used so far by the gateway, the bench process and RGW. */
  cpu: () => Promise<{ gateway: number; bench: number; rgw: number }>;
}

const seconds = (from: bigint) => Number(process.hrtime.bigint() - from) / 1e9;

/**
 * Downloads of `size` bytes with S3_DOWNLOADS=redirect: the gateway's 302, then a plain HTTP GET of
 * the presigned Location (no SDK, no credentials), against GetObject with the SDK, in back-to-back
 * pairs that alternate which goes first. Gateway CPU per MiB is the point: it should be near zero.
 */
export async function redirectDownloads(run: RedirectRun): Promise<{ row: string[]; note: string; figure: Figure; details: Record<string, unknown> }> {
  const { client, size } = run;
  const auth = { authorization: `Bearer ${run.token}` };
  const fileId = await uploadBig(client, auth, size);
  const stores = new Map<string, HttpClient>();
  const viaRedirect = async () => {
    const res = await client.request('GET', `/v1/files/${fileId}/content`, { headers: auth, discardBody: true });
    const location = res.headers.location;
    if (res.status !== 302 || !location) throw new Error(`redirect mode: ${res.status} without a Location`);
    const url = new URL(location);
    let store = stores.get(url.origin);
    if (!store) stores.set(url.origin, (store = new HttpClient(url.origin)));
    const got = await store.request('GET', url.pathname + url.search, { discardBody: true });
    if (got.status !== 200 || got.bytes !== size) throw new Error(`presigned GET: ${got.status}, ${got.bytes} bytes`);
  };
  const direct = async () => {
    const obj = await run.sdk.send(new GetObjectCommand({ Bucket: run.bucket, Key: run.directKey }));
    for await (const _chunk of obj.Body as AsyncIterable<Buffer>) void _chunk;
  };
  const t = { redirect: [] as number[], sdk: [] as number[] };
  const cpu: Array<{ gateway: number; bench: number; rgw: number }> = [];
  const timed = async (what: keyof typeof t, op: () => Promise<void>) => {
    const before = await run.cpu();
    const start = process.hrtime.bigint();
    await op();
    t[what].push(seconds(start));
    const after = await run.cpu();
    if (what === 'redirect') cpu.push({ gateway: after.gateway - before.gateway, bench: after.bench - before.bench, rgw: after.rgw - before.rgw });
  };
  try {
    await viaRedirect();
    await direct();
    for (let i = 0; i < run.reps; i++) {
      const pair = [() => timed('redirect', viaRedirect), () => timed('sdk', direct)];
      for (const op of i % 2 ? pair.reverse() : pair) await op();
    }
  } finally {
    for (const store of stores.values()) store.close();
  }
  const median = (xs: number[]) => summarize(xs).p50;
  const mibps = (s: number) => size / MiB / s;
  const ratio = median(t.redirect.map((r, i) => mibps(r) / mibps(t.sdk[i]!)));
  const perMiB = (who: 'gateway' | 'bench' | 'rgw') => fmt((summarize(cpu.map((c) => c[who])).p50 * 1000) / (size / MiB), 2);
  const what = `${size / MiB} MiB download (redirect)`;
  return {
    row: [what, `${fmt(mibps(median(t.redirect)))} MiB/s`, `${fmt(mibps(median(t.sdk)))} MiB/s`, fmt(ratio, 2), '>= 0.80'],
    note: `S3_DOWNLOADS=redirect, CPU ms per MiB of a download, gateway / bench process / RGW: ${perMiB('gateway')} / ${perMiB('bench')} / ${perMiB('rgw')} (the 302, then a plain HTTP GET of the presigned URL; medians of ${run.reps} pairs)`,
    figure: figure('s3', what, 'throughput', 'MiB/s', 'rate', mibps(median(t.redirect)), [{ name: 'AWS SDK straight to RGW', value: mibps(median(t.sdk)) }]),
    details: { seconds: t, cpu },
  };
}

/** Creates a file of `size` random bytes through the gateway (multipart, then its content PUT); returns its id. */
async function uploadBig(client: HttpClient, auth: Record<string, string>, size: number): Promise<string> {
  const created = await client.request('POST', '/v1/files', {
    headers: { ...auth, 'content-type': 'multipart/form-data; boundary=b' },
    body: '--b\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\nx\r\n--b--\r\n',
  });
  if (created.status !== 201) throw new Error(`file creation: ${created.status}`);
  const fileId = JSON.parse(created.body.toString()).id as string;
  const put = await client.request('PUT', `/v1/files/${fileId}/content`, { headers: { ...auth, 'content-type': 'application/octet-stream' }, body: randomBytes(size) });
  if (put.status !== 200) throw new Error(`upload through the gateway: ${put.status}`);
  return fileId;
}
