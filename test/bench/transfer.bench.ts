import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import { createReadStream, createWriteStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BenchContext } from './context';
import { HttpClient, provisionUsers, type BenchUser } from './http.client';
import { figure, fmt, fmtRatio, msSince, now, summarize, type Figure, type ScenarioReport } from './stats';

const MB = 1e6;

export async function writeRandomFile(file: string, bytes: number): Promise<void> {
  const chunk = Buffer.alloc(1024 * 1024);
  const out = createWriteStream(file);
  for (let written = 0; written < bytes; written += chunk.length) {
    randomFillSync(chunk);
    const part = chunk.subarray(0, Math.min(chunk.length, bytes - written));
    if (!out.write(part)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}

const sink = () =>
  new Writable({
    write(_chunk, _enc, done) {
      done();
    },
  });

/** A multipart body streamed from disk: the part header, the file's bytes, the closing boundary. */
function multipart(file: string, name: string, bytes: number): { body: Readable; headers: Record<string, string | number> } {
  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* parts() {
    yield head;
    for await (const chunk of createReadStream(file, { highWaterMark: 256 * 1024 })) yield chunk as Buffer;
    yield tail;
  }
  return {
    body: Readable.from(parts()),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + bytes + tail.length },
  };
}

/**
 * The second ceiling: a plain node:http server in a process of its own, like the gateway, that pipes
 * a request body into a file (POST) or a file into the response (GET). HTTP over loopback with no
 * framework, no multipart, no hashing and no database.
 */
const PLAIN_SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const server = http.createServer((req, res) => {
  const file = new URL(req.url, 'http://x').searchParams.get('path');
  if (req.method === 'POST') {
    const out = fs.createWriteStream(file);
    req.pipe(out);
    out.on('finish', () => { res.writeHead(201); res.end(); });
    out.on('error', () => { res.writeHead(500); res.end(); });
    return;
  }
  fs.stat(file, (err, st) => {
    if (err) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'content-length': st.size });
    fs.createReadStream(file).pipe(res);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

export async function startPlainServer(): Promise<{ child: ChildProcess; client: HttpClient }> {
  const child = spawn(process.execPath, ['-e', PLAIN_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (code) => reject(new Error(`plain HTTP server exited (${code})`)));
  });
  return { child, client: new HttpClient(`http://127.0.0.1:${port}`) };
}

interface Sample {
  ms: number[];
  bytes: number;
}

const rate = (s: Sample) => (s.bytes * s.ms.length) / MB / (s.ms.reduce((a, b) => a + b, 0) / 1000);

export async function runTransfer(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const [user] = (await provisionUsers(client, ctx.adminToken, ['transfer'])) as [BenchUser];
  const work = path.join(stack.dir, 'bench-transfer');
  await fs.mkdir(work, { recursive: true });
  const figures: Figure[] = [];
  const rows: string[][] = [];
  const details: Record<string, unknown> = {};
  const plain = await startPlainServer();
  try {
  for (const size of profile.transfer.sizes) {
    const src = path.join(work, `source-${size.bytes}.bin`);
    await writeRandomFile(src, size.bytes);
    const upload: Sample = { ms: [], bytes: size.bytes };
    const download: Sample = { ms: [], bytes: size.bytes };
    const diskWrite: Sample = { ms: [], bytes: size.bytes };
    const diskRead: Sample = { ms: [], bytes: size.bytes };
    const hashing: Sample = { ms: [], bytes: size.bytes };
    const plainUp: Sample = { ms: [], bytes: size.bytes };
    const plainDown: Sample = { ms: [], bytes: size.bytes };
    let stored = '';
    // One warm-up of each path, then the measured repetitions, alternating service and ceiling.
    for (let rep = -1; rep < size.reps; rep++) {
      const { body, headers } = multipart(src, `bench-${size.bytes}-${rep + 1}.bin`, size.bytes);
      let t = now();
      const res = await client.request('POST', '/v1/files', { headers: { ...headers, authorization: `Bearer ${user.token}` }, body });
      const upMs = msSince(t);
      if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.body.toString('utf8').slice(0, 300)}`);
      const id = (JSON.parse(res.body.toString('utf8')) as { id: string }).id;

      t = now();
      const got = await client.request('GET', `/v1/files/${id}/content`, { headers: { authorization: `Bearer ${user.token}` }, discardBody: true });
      const downMs = msSince(t);
      if (got.status !== 200 || got.bytes !== size.bytes) throw new Error(`download failed: ${got.status}, ${got.bytes} bytes`);

      // Ceiling: the same bytes from the same source file to a new file on the same disk, then read back.
      const copy = path.join(work, `copy-${rep + 1}.bin`);
      t = now();
      await pipeline(createReadStream(src), createWriteStream(copy));
      const writeMs = msSince(t);
      stored = path.join(stack.uploadDir, user.deviceId, `${id}.bin`);
      t = now();
      await pipeline(createReadStream(stored), sink());
      const readMs = msSince(t);
      // What the gateway adds on the way in: SHA-256 of every byte (measured alone, for the explanation).
      t = now();
      const hash = createHash('sha256');
      await pipeline(createReadStream(src), new Writable({ write: (c, _e, done) => (hash.update(c), done()) }));
      hash.digest();
      const hashMs = msSince(t);
      await fs.rm(copy, { force: true });
      const plainTarget = path.join(work, `plain-${rep + 1}.bin`);
      t = now();
      const put = await plain.client.request('POST', `/?path=${encodeURIComponent(plainTarget)}`, {
        headers: { 'content-length': size.bytes, 'content-type': 'application/octet-stream' },
        body: createReadStream(src),
      });
      const plainUpMs = msSince(t);
      if (put.status !== 201) throw new Error(`plain HTTP upload failed: ${put.status}`);
      await fs.rm(plainTarget, { force: true });
      t = now();
      const fetched = await plain.client.request('GET', `/?path=${encodeURIComponent(stored)}`, { discardBody: true });
      const plainDownMs = msSince(t);
      if (fetched.bytes !== size.bytes) throw new Error(`plain HTTP download failed: ${fetched.status}, ${fetched.bytes} bytes`);
      if (rep < 0) continue;
      plainUp.ms.push(plainUpMs);
      plainDown.ms.push(plainDownMs);
      upload.ms.push(upMs);
      download.ms.push(downMs);
      diskWrite.ms.push(writeMs);
      diskRead.ms.push(readMs);
      hashing.ms.push(hashMs);
    }
    await fs.rm(src, { force: true });

    const up = rate(upload);
    const down = rate(download);
    const w = rate(diskWrite);
    const r = rate(diskRead);
    const pu = rate(plainUp);
    const pd = rate(plainDown);
    log(`transfer: ${size.label}: upload ${fmt(up)} MB/s (plain HTTP ${fmt(pu)}, disk copy ${fmt(w)}), download ${fmt(down)} MB/s (plain HTTP ${fmt(pd)}, disk read ${fmt(r)})`);
    figures.push(
      figure('transfer', `upload ${size.label}`, 'throughput', 'MB/s', 'rate', up, [
        { name: 'plain stream copy to the same disk', value: w },
        { name: 'plain node:http server piping to disk', value: pu },
      ]),
      figure('transfer', `download ${size.label}`, 'throughput', 'MB/s', 'rate', down, [
        { name: 'plain stream read from the same disk', value: r },
        { name: 'plain node:http server piping the file', value: pd },
      ]),
    );
    rows.push([size.label, 'upload (POST /v1/files)', String(size.reps), fmt(up), fmt(summarize(upload.ms).p50), fmt(w), fmtRatio(up, w, 'rate'), fmt(pu), fmtRatio(up, pu, 'rate')]);
    rows.push([
      size.label,
      'download (GET /v1/files/:id/content)',
      String(size.reps),
      fmt(down),
      fmt(summarize(download.ms).p50),
      fmt(r),
      fmtRatio(down, r, 'rate'),
      fmt(pd),
      fmtRatio(down, pd, 'rate'),
    ]);
    details[size.label] = {
      upload: summarize(upload.ms),
      download: summarize(download.ms),
      diskCopy: summarize(diskWrite.ms),
      diskRead: summarize(diskRead.ms),
      sha256MBps: rate(hashing),
      plainHttpUpload: summarize(plainUp.ms),
      plainHttpDownload: summarize(plainDown.ms),
    };
  }
  } finally {
    plain.client.close();
    plain.child.kill('SIGTERM');
  }
  // The fixed cost of an upload, whatever its size: 1-byte files, same path.
  const tiny = path.join(work, 'tiny.bin');
  await fs.writeFile(tiny, 'x');
  const tinyMs: number[] = [];
  for (let i = -2; i < 20; i++) {
    const { body, headers } = multipart(tiny, `tiny-${i + 2}.bin`, 1);
    const t = now();
    const res = await client.request('POST', '/v1/files', { headers: { ...headers, authorization: `Bearer ${user.token}` }, body });
    if (res.status !== 201) throw new Error(`upload failed: ${res.status}`);
    if (i >= 0) tinyMs.push(msSince(t));
  }
  const fixed = summarize(tinyMs);
  details.oneByteUpload = fixed;

  const hashRates = Object.entries(details)
    .filter(([label]) => label !== 'oneByteUpload').map(([label, d]) => `${label}: ${fmt((d as { sha256MBps: number }).sha256MBps)} MB/s`);
  return {
    name: 'transfer',
    title: 'Upload and download (MB/s = 10^6 bytes/s, one request at a time)',
    headers: ['size', 'direction', 'reps', 'service MB/s', 'p50 ms', 'disk streams MB/s', 'of disk', 'plain HTTP MB/s', 'of plain HTTP'],
    rows,
    notes: [
      'Disk streams (the ceiling asked for): for the upload, the same source file copied with createReadStream -> createWriteStream into a new file on the same disk; for the download, the stored file read with createReadStream into a null sink. Both from the page cache, as the service\'s own reads are.',
      'Plain HTTP (what loopback HTTP alone allows): a bare node:http server in its own process that pipes the raw body (no multipart) into a file, or the stored file into the response; same client, same files.',
      `Fixed cost of one upload whatever its size (1-byte file, 20 sequential): p50 ${fmt(fixed.p50)} ms, p99 ${fmt(fixed.p99)} ms.`,
      `The gateway also hashes every uploaded byte (SHA-256, for the ETag); SHA-256 alone over the same file in the bench process: ${hashRates.join(', ')}.`,
    ],
    figures,
    details,
  };
}
