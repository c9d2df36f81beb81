import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser } from './http.client';
import { multipart, PLAIN_CHUNKS, SEND_CHUNK, startPlainServer, writeRandomFile, type PlainServer } from './transfer.plain';
import { figure, fmt, fmtRatio, msSince, now, summarize, type Figure, type ScenarioReport } from './stats';

const MB = 1e6;
/** Rounds of the range lists, service, plain server and floor alternating. */
const RANGE_ROUNDS = 4;

const sink = () =>
  new Writable({
    write(_chunk, _enc, done) {
      done();
    },
  });

interface Sample {
  ms: number[];
  bytes: number;
}

/** CPU milliseconds (user + system) a process has used so far, from /proc/<pid>/stat (10 ms ticks). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const rate = (s: Sample) => (s.bytes * s.ms.length) / MB / (s.ms.reduce((a, b) => a + b, 0) / 1000);
const sample = (bytes: number): Sample => ({ ms: [], bytes });
const best = (samples: Sample[]) => Math.max(...samples.map(rate));

/** Random ranges of `rangeBytes` inside a file of `size` bytes, the same list for every path. */
function ranges(size: number, rangeBytes: number, count: number): string[] {
  let seed = 42;
  const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  return Array.from({ length: count }, () => {
    const start = Math.floor(next() * (size - rangeBytes));
    return `bytes=${start}-${start + rangeBytes - 1}`;
  });
}

async function timeRanges(
  request: (range: string) => Promise<{ status: number; bytes: number }>,
  list: string[],
  rangeBytes: number,
): Promise<number[]> {
  const ms: number[] = [];
  for (const range of list) {
    const t = now();
    const res = await request(range);
    ms.push(msSince(t));
    if (res.status !== 206 || res.bytes !== rangeBytes) throw new Error(`range request failed: ${res.status}, ${res.bytes} bytes`);
  }
  return ms;
}

export async function runTransfer(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const [user] = (await provisionUsers(client, ctx.adminToken, ['transfer'])) as [BenchUser];
  const auth = { authorization: `Bearer ${user.token}` };
  const work = path.join(stack.dir, 'bench-transfer');
  await fs.mkdir(work, { recursive: true });
  const figures: Figure[] = [];
  const rows: string[][] = [];
  const details: Record<string, unknown> = {};
  const plain: PlainServer = await startPlainServer({ databaseUrl: stack.databaseUrl, jwtSecret: stack.jwtSecret });
  let last: { id: string; stored: string; bytes: number } | undefined;
  let canPut = true;
  const rangeCpu: string[] = [];
  try {
    for (const size of profile.transfer.sizes) {
      const src = path.join(work, `source-${size.bytes}.bin`);
      await writeRandomFile(src, size.bytes);
      const [upload, replace, download, diskWrite, diskRead, hashing] = Array.from({ length: 6 }, () => sample(size.bytes));
      const plainUp = PLAIN_CHUNKS.map(() => sample(size.bytes));
      const plainDown = PLAIN_CHUNKS.map(() => sample(size.bytes));
      const raw = () => createReadStream(src, { highWaterMark: SEND_CHUNK });
      // One warm-up of each path, then the measured repetitions, alternating service and ceilings.
      for (let rep = -1; rep < size.reps; rep++) {
        const measured = rep >= 0;
        const { body, headers } = multipart(src, `bench-${size.bytes}-${rep + 1}.bin`, size.bytes);
        let t = now();
        const res = await client.request('POST', '/v1/files', { headers: { ...headers, ...auth }, body });
        if (measured) upload.ms.push(msSince(t));
        if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.body.toString('utf8').slice(0, 300)}`);
        const id = (JSON.parse(res.body.toString('utf8')) as { id: string }).id;

        if (canPut) {
          t = now();
          const put = await client.request('PUT', `/v1/files/${id}/content`, {
            headers: { ...auth, 'content-type': 'application/octet-stream', 'content-length': size.bytes },
            body: raw(),
          });
          if (measured) replace.ms.push(msSince(t));
          // A build from before PUT content existed answers 404 for the route; its figures are left out.
          if (put.status === 404 && rep < 0) canPut = false;
          else if (put.status !== 200) throw new Error(`PUT content failed: ${put.status} ${put.body.toString('utf8').slice(0, 300)}`);
        }
        const storageKey = (await stack.db('resources').where({ id }).first<{ storage_key: string }>('storage_key'))!.storage_key;
        const stored = path.join(stack.uploadDir, storageKey);
        last = { id, stored, bytes: size.bytes };

        t = now();
        const got = await client.request('GET', `/v1/files/${id}/content`, { headers: auth, discardBody: true });
        if (measured) download.ms.push(msSince(t));
        if (got.status !== 200 || got.bytes !== size.bytes) throw new Error(`download failed: ${got.status}, ${got.bytes} bytes`);

        // Disk: the same bytes from the same source file to a new file on the same disk, then read back.
        const copy = path.join(work, `copy-${rep + 1}.bin`);
        t = now();
        await pipeline(createReadStream(src), createWriteStream(copy));
        if (measured) diskWrite.ms.push(msSince(t));
        t = now();
        await pipeline(createReadStream(stored), sink());
        if (measured) diskRead.ms.push(msSince(t));
        // SHA-256 of every byte, which the gateway and the plain ceiling both do (measured alone, for the explanation).
        t = now();
        const hash = createHash('sha256');
        await pipeline(createReadStream(src, { highWaterMark: SEND_CHUNK }), new Writable({ write: (c, _e, done) => (hash.update(c), done()) }));
        hash.digest();
        if (measured) hashing.ms.push(msSince(t));
        await fs.rm(copy, { force: true });

        for (const [i, chunk] of PLAIN_CHUNKS.entries()) {
          const target = path.join(work, `plain-${rep + 1}.bin`);
          t = now();
          const sent = await plain.client.request('POST', `/?chunk=${chunk.value}&path=${encodeURIComponent(target)}`, {
            headers: { 'content-length': size.bytes, 'content-type': 'application/octet-stream' },
            body: raw(),
          });
          if (measured) plainUp[i]!.ms.push(msSince(t));
          if (sent.status !== 201) throw new Error(`plain HTTP upload failed: ${sent.status}`);
          await fs.rm(target, { force: true });
          t = now();
          const fetched = await plain.client.request('GET', `/?chunk=${chunk.value}&path=${encodeURIComponent(stored)}`, { discardBody: true });
          if (measured) plainDown[i]!.ms.push(msSince(t));
          if (fetched.bytes !== size.bytes) throw new Error(`plain HTTP download failed: ${fetched.status}, ${fetched.bytes} bytes`);
        }
      }
      await fs.rm(src, { force: true });

      const [up, put, down, w, r] = [rate(upload), canPut ? rate(replace) : 0, rate(download), rate(diskWrite), rate(diskRead)];
      const [pu, pd] = [best(plainUp), best(plainDown)];
      // The multipart upload beside the raw PUT of the same bytes: what multipart parsing costs.
      const multipartOfPut = canPut && put > 0 ? ` (${fmtRatio(up, put, 'rate')} of PUT)` : '';
      log(`transfer: ${size.label}: upload ${fmt(up)} MB/s${multipartOfPut}, PUT ${fmt(put)} (plain HTTP ${fmt(pu)}, disk copy ${fmt(w)}), download ${fmt(down)} MB/s (plain HTTP ${fmt(pd)}, disk read ${fmt(r)})`);
      const inCeilings = [
        { name: 'plain stream copy to the same disk', value: w },
        { name: 'plain node:http server hashing (SHA-256) and writing to disk (fastest chunk size)', value: pu },
      ];
      figures.push(
        figure('transfer', `upload ${size.label}`, 'throughput', 'MB/s', 'rate', up, inCeilings),
        ...(canPut ? [figure('transfer', `PUT content ${size.label}`, 'throughput', 'MB/s', 'rate', put, inCeilings)] : []),
        figure('transfer', `download ${size.label}`, 'throughput', 'MB/s', 'rate', down, [
          { name: 'plain stream read from the same disk', value: r },
          { name: 'plain node:http server piping the file (fastest chunk size)', value: pd },
        ]),
      );
      const row = (what: string, s: Sample, value: number, disk: number, plainValue: number) => [
        size.label,
        what,
        String(size.reps),
        fmt(value),
        fmt(summarize(s.ms).p50),
        fmt(disk),
        fmtRatio(value, disk, 'rate'),
        fmt(plainValue),
        fmtRatio(value, plainValue, 'rate'),
        '',
        '',
      ];
      rows.push(row('upload (POST /v1/files, multipart)', upload, up, w, pu));
      if (canPut) rows.push(row('replace (PUT /v1/files/:id/content)', replace, put, w, pu));
      rows.push(row('download (GET /v1/files/:id/content)', download, down, r, pd));
      details[size.label] = {
        upload: summarize(upload.ms),
        put: summarize(replace.ms),
        download: summarize(download.ms),
        multipartOfPut: canPut && put > 0 ? up / put : null,
        diskCopy: summarize(diskWrite.ms),
        diskRead: summarize(diskRead.ms),
        sha256MBps: rate(hashing),
        plainHttpUploadMBps: Object.fromEntries(PLAIN_CHUNKS.map((c, i) => [c.label, rate(plainUp[i]!)])),
        plainHttpDownloadMBps: Object.fromEntries(PLAIN_CHUNKS.map((c, i) => [c.label, rate(plainDown[i]!)])),
      };
    }

    // Range requests: random 64 KiB and 1 MiB ranges of the largest file, service, plain server and floor in turn.
    if (last) {
      for (const { label, bytes, count } of [
        { label: '64 KiB', bytes: 64 * 1024, count: profile.name === 'quick' ? 25 : 150 },
        { label: '1 MiB', bytes: 1024 * 1024, count: profile.name === 'quick' ? 10 : 50 },
      ]) {
        if (bytes >= last.bytes) continue;
        const list = ranges(last.bytes, bytes, count);
        const serviceMs: number[] = [];
        const plainMs = PLAIN_CHUNKS.map(() => [] as number[]);
        // CPU of the gateway process and of the plain server's, over their own requests only.
        const cpu = { service: 0, plain: PLAIN_CHUNKS.map(() => 0), floor: PLAIN_CHUNKS.map(() => 0) };
        const floorMs = PLAIN_CHUNKS.map(() => [] as number[]);
        // Four short rounds rather than two long ones: a burst of other work on the machine then
        // weighs on service, floor and plain server alike.
        for (let round = 0; round < RANGE_ROUNDS; round++) {
          const target = last;
          let before = cpuMs(stack.gatewayPid);
          serviceMs.push(
            ...(await timeRanges((range) => client.request('GET', `/v1/files/${target.id}/content`, { headers: { ...auth, range }, discardBody: true }), list, bytes)),
          );
          cpu.service += cpuMs(stack.gatewayPid) - before;
          for (const [i, chunk] of PLAIN_CHUNKS.entries()) {
            const url = `/?chunk=${chunk.value}&path=${encodeURIComponent(target.stored)}`;
            before = cpuMs(plain.child.pid!);
            plainMs[i]!.push(...(await timeRanges((range) => plain.client.request('GET', url, { headers: { range }, discardBody: true }), list, bytes)));
            cpu.plain[i] += cpuMs(plain.child.pid!) - before;
            before = cpuMs(plain.child.pid!);
            floorMs[i]!.push(...(await timeRanges((range) => plain.client.request('GET', `${url}&id=${target.id}`, { headers: { ...auth, range }, discardBody: true }), list, bytes)));
            cpu.floor[i] += cpuMs(plain.child.pid!) - before;
          }
        }
        const perSecond = (ms: number[]) => (ms.length * 1000) / ms.reduce((a, b) => a + b, 0);
        const service = perSecond(serviceMs);
        const rates = plainMs.map(perSecond);
        const ceiling = Math.max(...rates);
        const fastest = rates.indexOf(ceiling);
        const floorRates = floorMs.map(perSecond);
        const floorRate = Math.max(...floorRates);
        const floorAt = floorRates.indexOf(floorRate);
        const cpuPerRequest = {
          service: cpu.service / serviceMs.length,
          plain: cpu.plain[fastest]! / plainMs[fastest]!.length,
          floor: cpu.floor[floorAt]! / floorMs[floorAt]!.length,
        };
        log(`transfer: ${label} ranges: ${fmt(service)} req/s (floor ${fmt(floorRate)}, plain HTTP ${fmt(ceiling)}); CPU per request ${fmt(cpuPerRequest.service)} ms (floor ${fmt(cpuPerRequest.floor)}, plain HTTP ${fmt(cpuPerRequest.plain)})`);
        rangeCpu.push(`${label}: ${fmt(cpuPerRequest.service)} ms (floor ${fmt(cpuPerRequest.floor)} ms, plain HTTP ${fmt(cpuPerRequest.plain)} ms)`);
        figures.push(
          figure('transfer', `range ${label}`, 'requests', 'req/s', 'rate', service, [
            { name: 'floor: plain node:http server checking the token and reading the row first, same ranges', value: floorRate },
            { name: 'plain node:http server, same ranges', value: ceiling },
          ]),
        );
        rows.push([`${label} ranges`, 'GET with Range, one at a time (req/s)', String(serviceMs.length), fmt(service), fmt(summarize(serviceMs).p50), '', '', fmt(ceiling), fmtRatio(service, ceiling, 'rate'), fmt(floorRate), fmtRatio(service, floorRate, 'rate')]);
        details[`range${label.replace(' ', '')}`] = {
          service: summarize(serviceMs),
          plain: Object.fromEntries(PLAIN_CHUNKS.map((c, i) => [c.label, summarize(plainMs[i]!)])),
          floor: Object.fromEntries(PLAIN_CHUNKS.map((c, i) => [c.label, summarize(floorMs[i]!)])),
          cpuMsPerRequest: cpuPerRequest,
        };
      }
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
    const res = await client.request('POST', '/v1/files', { headers: { ...headers, ...auth }, body });
    if (res.status !== 201) throw new Error(`upload failed: ${res.status}`);
    if (i >= 0) tinyMs.push(msSince(t));
  }
  const fixed = summarize(tinyMs);
  details.oneByteUpload = fixed;

  const hashRates = Object.entries(details)
    .filter(([, d]) => (d as { sha256MBps?: number }).sha256MBps !== undefined)
    .map(([label, d]) => `${label}: ${fmt((d as { sha256MBps: number }).sha256MBps)} MB/s`);
  return {
    name: 'transfer',
    title: 'Upload, replace and download (MB/s = 10^6 bytes/s, one request at a time)',
    headers: ['size', 'direction', 'reps', 'service MB/s', 'p50 ms', 'disk streams MB/s', 'of disk', 'plain HTTP MB/s', 'of plain HTTP', 'floor', 'of floor'],
    rows,
    notes: [
      'Disk streams: for the upload, the same source file copied with createReadStream -> createWriteStream into a new file on the same disk; for the download, the stored file read with createReadStream into a null sink. Both from the page cache, as the service\'s own reads are.',
      `Plain HTTP (the ceiling): a bare node:http server in its own process that receives the raw body (no multipart), hashes it with SHA-256 and writes it into a file, or the stored file (or range) into the response with the same headers as the service's content responses; measured with Node's stock stream chunk sizes and with 1 MiB chunks, and the faster of the two is the ceiling. Every body is sent from the same source file in ${SEND_CHUNK / 1024 / 1024} MiB chunks by the same client.`,
      'Floor (ranges): the plain server reading the range only after what no authenticated read can skip: the bearer token verified (jsonwebtoken, HS256, the service\'s secret) and the file\'s row read with one SELECT of the caller\'s active file (mysql2); the faster chunk size.',
      `CPU per range request (user + system, from /proc; the plain server's at its faster chunk size): ${rangeCpu.join('; ')}.`,
      `Fixed cost of one upload whatever its size (1-byte file, 20 sequential): p50 ${fmt(fixed.p50)} ms, p99 ${fmt(fixed.p99)} ms.`,
      `The gateway and the plain upload ceiling hash every uploaded byte (SHA-256, for the ETag and the digests); SHA-256 alone over the same file in the bench process: ${hashRates.join(', ')}.`,
    ],
    figures,
    details,
  };
}
