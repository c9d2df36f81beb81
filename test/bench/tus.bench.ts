import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser, type HttpClient } from './http.client';
import { figure, fmt, fmtRatio, msSince, now, summarize, type Figure, type ScenarioReport } from './stats';
import { PLAIN_CHUNKS, SEND_CHUNK, startPlainServer, writeRandomFile } from './transfer.plain';

const MB = 1e6;
const MiB = 1024 * 1024;
const CHUNK = 5 * MiB;

const metadata = (name: string) => `name ${Buffer.from(name).toString('base64')}`;

/** One tus upload of `src`: creation, then PATCHes of at most `chunk` bytes; returns when the last one answered 200. */
async function tusUpload(client: HttpClient, token: string, src: string, bytes: number, chunk: number, name: string): Promise<void> {
  const auth = { authorization: `Bearer ${token}`, 'tus-resumable': '1.0.0' };
  const created = await client.request('POST', '/v1/uploads', { headers: { ...auth, 'upload-length': bytes, 'upload-metadata': metadata(name) } });
  if (created.status !== 201) throw new Error(`tus creation failed: ${created.status} ${created.body.toString('utf8').slice(0, 300)}`);
  const location = String(created.headers.location);
  for (let offset = 0; offset < bytes; offset += chunk) {
    const length = Math.min(chunk, bytes - offset);
    const res = await client.request('PATCH', location, {
      headers: { ...auth, 'upload-offset': offset, 'content-type': 'application/offset+octet-stream', 'content-length': length },
      body: createReadStream(src, { start: offset, end: offset + length - 1, highWaterMark: SEND_CHUNK }),
    });
    const last = offset + length === bytes;
    if (res.status !== (last ? 200 : 204)) throw new Error(`tus PATCH at ${offset} failed: ${res.status} ${res.body.toString('utf8').slice(0, 300)}`);
  }
}

const rate = (bytes: number, ms: number[]) => (bytes * ms.length) / MB / (ms.reduce((a, b) => a + b, 0) / 1000);

/**
 * tus uploads through /v1/uploads (creation + PATCHes, completion included: hashing, the file row,
 * the rename into place) in one PATCH and in 5 MiB chunks, next to the plain-HTTP ceiling of the
 * transfer bench (a bare node:http server hashing the raw body with SHA-256 and writing it to disk), alternating in one run.
 */
export async function runTus(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const size = profile.name === 'full' ? { label: '100 MiB', bytes: 100 * MiB, reps: 3 } : { label: '10 MiB', bytes: 10 * MiB, reps: 2 };
  const [user] = (await provisionUsers(client, ctx.adminToken, ['tus'])) as [BenchUser];
  const work = path.join(stack.dir, 'bench-tus');
  await fs.mkdir(work, { recursive: true });
  const src = path.join(work, 'source.bin');
  await writeRandomFile(src, size.bytes);
  const plain = await startPlainServer();
  const single: number[] = [];
  const chunked: number[] = [];
  const plainUp = PLAIN_CHUNKS.map(() => [] as number[]);
  try {
    for (let rep = -1; rep < size.reps; rep++) {
      let t = now();
      await tusUpload(client, user.token, src, size.bytes, size.bytes, `one-${rep + 1}.bin`);
      const singleMs = msSince(t);
      t = now();
      await tusUpload(client, user.token, src, size.bytes, CHUNK, `chunked-${rep + 1}.bin`);
      const chunkedMs = msSince(t);
      const plainMs: number[] = [];
      for (const chunk of PLAIN_CHUNKS) {
        const target = path.join(work, `plain-${rep + 1}.bin`);
        t = now();
        const put = await plain.client.request('POST', `/?chunk=${chunk.value}&path=${encodeURIComponent(target)}`, {
          headers: { 'content-length': size.bytes, 'content-type': 'application/offset+octet-stream' },
          body: createReadStream(src, { highWaterMark: SEND_CHUNK }),
        });
        plainMs.push(msSince(t));
        if (put.status !== 201) throw new Error(`plain HTTP upload failed: ${put.status}`);
        await fs.rm(target, { force: true });
      }
      if (rep < 0) continue;
      single.push(singleMs);
      chunked.push(chunkedMs);
      plainMs.forEach((ms, i) => plainUp[i]!.push(ms));
    }
  } finally {
    plain.client.close();
    plain.child.kill('SIGTERM');
    await fs.rm(src, { force: true });
  }
  const one = rate(size.bytes, single);
  const chunks = rate(size.bytes, chunked);
  // The ceiling is the faster of the plain server's two stream settings, as in the transfer bench.
  const ceiling = Math.max(...plainUp.map((ms) => rate(size.bytes, ms)));
  log(`tus: ${size.label}: one PATCH ${fmt(one)} MB/s, 5 MiB chunks ${fmt(chunks)} MB/s, plain HTTP ${fmt(ceiling)} MB/s`);
  const figures: Figure[] = [
    figure('tus', `upload ${size.label} in one PATCH`, 'throughput', 'MB/s', 'rate', one, [{ name: 'plain node:http server hashing and writing to disk', value: ceiling }]),
    figure('tus', `upload ${size.label} in 5 MiB PATCHes`, 'throughput', 'MB/s', 'rate', chunks, [{ name: 'plain node:http server hashing and writing to disk', value: ceiling }]),
  ];
  const row = (mode: string, value: number, ms: number[]) => [size.label, mode, String(size.reps), fmt(value), fmt(summarize(ms).p50), fmt(ceiling), fmtRatio(value, ceiling, 'rate')];
  return {
    name: 'tus',
    title: 'Resumable upload over tus (MB/s = 10^6 bytes/s, one upload at a time, creation and completion included)',
    headers: ['size', 'mode', 'reps', 'service MB/s', 'p50 ms', 'plain HTTP MB/s', 'of plain HTTP'],
    rows: [row('one PATCH', one, single), row(`${CHUNK / MiB} MiB PATCHes`, chunks, chunked)],
    notes: [
      'Each upload: POST /v1/uploads, then PATCHes in order; the last PATCH answers 200 once the file row is committed and the bytes are renamed into place.',
      `Plain HTTP: the transfer bench's bare node:http server hashing the raw body (SHA-256) and writing it into a file, with Node's stock stream chunks and with 1 MiB chunks, the faster of the two; every body is sent from the same source file in ${SEND_CHUNK / MiB} MiB chunks by the same client.`,
    ],
    figures,
    details: {
      single: summarize(single),
      chunked: summarize(chunked),
      plainHttpUploadMBps: Object.fromEntries(PLAIN_CHUNKS.map((c, i) => [c.label, rate(size.bytes, plainUp[i]!)])),
    },
  };
}
