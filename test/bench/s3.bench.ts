import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { GetObjectCommand, PutObjectCommand, CopyObjectCommand, DeleteObjectCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { S3Config } from '../../shared/config';
import { createS3Client } from '../../shared/storage/s3/s3.client';
import { PART_SIZE, PARTS_IN_FLIGHT } from '../../shared/storage/s3/s3.store';
import { createBucket, Rgw } from '../support/rgw';
import { withStack } from './cluster.bench';
import type { BenchContext } from './context';
import type { HttpClient } from './http.client';
import { redirectDownloads } from './s3.redirect';
import { figure, fmt, summarize, type Figure, type ScenarioReport } from './stats';
import { cpuSeconds } from './sync.scale';

const MiB = 1024 * 1024;

export const seconds = (from: bigint) => Number(process.hrtime.bigint() - from) / 1e9;

/** `body` as a stream of 64 KiB chunks, as a socket or a file delivers it. */
function chunked(body: Buffer): Readable {
  return Readable.from(
    (function* () {
      for (let at = 0; at < body.length; at += 64 * 1024) yield body.subarray(at, at + 64 * 1024);
    })(),
    { objectMode: false },
  );
}

/** CPU seconds used so far by the gateway, the bench process itself and RGW's daemons (mon, osd, radosgw). */
export async function cpuNow(gatewayPid: number, rgwDir: string): Promise<{ gateway: number; bench: number; rgw: number }> {
  const run = path.join(rgwDir, 'run');
  const pids = await Promise.all((await fs.readdir(run)).filter((f) => f.endsWith('.pid')).map(async (f) => Number(await fs.readFile(path.join(run, f), 'utf8'))));
  let rgw = 0;
  for (const pid of pids) rgw += await cpuSeconds(pid);
  const own = process.cpuUsage();
  return { gateway: await cpuSeconds(gatewayPid), bench: (own.user + own.system) / 1e6, rgw };
}

/** Reads a GetObject's body to its end, as a client would, keeping nothing. */
export async function drain(body: unknown): Promise<void> {
  for await (const _chunk of body as AsyncIterable<Buffer>) void _chunk;
}

/**
 * Content on S3 (a one-node Ceph RGW started for the run): 100 MiB up and down and a 1 MiB range
 * through the gateway against the same operations straight to RGW with the AWS SDK (goal: at least
 * 0.8 each), downloads both streamed (S3_DOWNLOADS=proxy) and redirected to a presigned URL
 * (S3_DOWNLOADS=redirect, a second service on the same bucket), and 1 KiB uploads at 8 connections on
 * S3 against the bench's local-disk service.
 */
export async function runS3(ctx: BenchContext): Promise<ScenarioReport> {
  const bigSize = ctx.profile.name === 'quick' ? 20 * MiB : 100 * MiB;
  const reps = ctx.profile.name === 'quick' ? 2 : 5;
  // Downloads are short (a tenth of a second at 1 GiB/s): more of them, over the same objects.
  const downloadReps = ctx.profile.name === 'quick' ? 3 : 9;
  const rgw = await Rgw.start();
  try {
    const config: S3Config = {
      bucket: 'filesync-bench',
      prefix: '',
      endpoint: rgw.env.S3_ENDPOINT,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: rgw.env.S3_ACCESS_KEY_ID!, secretAccessKey: rgw.env.S3_SECRET_ACCESS_KEY! },
    };
    const sdk = createS3Client(config);
    await createBucket(sdk, config.bucket);
    const env = { ...rgw.env, STORAGE_DRIVER: 's3', S3_BUCKET: config.bucket, S3_PREFIX: 'service/', MAX_UPLOAD_BYTES: String(2 * bigSize) };
    const report: ScenarioReport = await withStack(ctx, env, async (stack, client, admin): Promise<ScenarioReport> => {
      const body = randomBytes(bigSize);
      const auth = { authorization: `Bearer ${admin.token}` };
      const created = await client.request('POST', '/v1/files', { headers: { ...auth, 'content-type': 'multipart/form-data; boundary=b' }, body: '--b\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\nx\r\n--b--\r\n' });
      const fileId = JSON.parse(created.body.toString()).id as string;

      const t = { up: [] as number[], down: [] as number[], range: [] as number[], sdkUp: [] as number[], sdkDown: [] as number[], sdkRange: [] as number[], sdkUpBuffer: [] as number[] };
      // CPU seconds per transfer of each process, to say where the time goes.
      const cpu: Record<string, { gateway: number; bench: number; rgw: number }[]> = { up: [], sdkUp: [], down: [], sdkDown: [] };
      const timed = async (what: keyof typeof t, op: () => Promise<void>) => {
        const before = await cpuNow(stack.gatewayPid, rgw.dir);
        const start = process.hrtime.bigint();
        await op();
        t[what].push(seconds(start));
        const after = await cpuNow(stack.gatewayPid, rgw.dir);
        cpu[what]?.push({ gateway: after.gateway - before.gateway, bench: after.bench - before.bench, rgw: after.rgw - before.rgw });
      };
      // The direct upload reads its body as a stream of 64 KiB chunks, as the gateway receives it, in
      // parts of the same size, as many in flight; a Buffer body is timed too (the SDK slices it and
      // copies nothing), for reference.
      const direct = (key: string, from: Buffer | Readable) => new Upload({ client: sdk, params: { Bucket: config.bucket, Key: key, Body: from }, partSize: PART_SIZE, queueSize: PARTS_IN_FLIGHT }).done();
      const gatewayUp = async () => {
        const put = await client.request('PUT', `/v1/files/${fileId}/content`, { headers: { ...auth, 'content-type': 'application/octet-stream' }, body });
        if (put.status !== 200) throw new Error(`upload through the gateway: ${put.status} ${put.body.toString().slice(0, 200)}`);
      };
      const gatewayDown = async () => {
        const get = await client.request('GET', `/v1/files/${fileId}/content`, { headers: auth, discardBody: true });
        if (get.bytes !== bigSize) throw new Error(`download through the gateway: ${get.status}, ${get.bytes} bytes`);
      };
      const directDown = async (key: string) => {
        await drain((await sdk.send(new GetObjectCommand({ Bucket: config.bucket, Key: key }))).Body);
      };
      // One untimed transfer of each kind before each series: a median of a few must not hold a cold
      // start (JIT, connection pools, the heap the uploads left). The two sides alternate which goes
      // first, and every upload is done before the downloads, so neither side reads while RGW still
      // settles the other's writes.
      await gatewayUp();
      await direct('direct/warm', chunked(body));
      for (let i = 0; i < reps; i++) {
        const pair = [() => timed('up', gatewayUp), () => timed('sdkUp', async () => void (await direct(`direct/big-${i}`, chunked(body))))];
        for (const op of i % 2 ? pair.reverse() : pair) await op();
        await timed('sdkUpBuffer', async () => void (await direct(`direct/buffer-${i}`, body)));
      }
      await gatewayDown();
      await directDown('direct/warm');
      for (let i = 0; i < downloadReps; i++) {
        const pair = [() => timed('down', gatewayDown), () => timed('sdkDown', () => directDown(`direct/big-${i % reps}`))];
        for (const op of i % 2 ? pair.reverse() : pair) await op();
      }
      const gatewayRange = async (from: number) => {
        const start = process.hrtime.bigint();
        const part = await client.request('GET', `/v1/files/${fileId}/content`, { headers: { ...auth, range: `bytes=${from}-${from + MiB - 1}` }, discardBody: true });
        if (part.status !== 206 || part.bytes !== MiB) throw new Error(`range through the gateway: ${part.status}, ${part.bytes} bytes`);
        return seconds(start);
      };
      const directRange = async (from: number) => {
        const start = process.hrtime.bigint();
        await drain((await sdk.send(new GetObjectCommand({ Bucket: config.bucket, Key: 'direct/big-0', Range: `bytes=${from}-${from + MiB - 1}` }))).Body);
        return seconds(start);
      };
      await gatewayRange(0);
      await directRange(0);
      for (let i = 0; i < 12 * reps; i++) {
        const from = Math.floor(Math.random() * (bigSize - MiB));
        if (i % 2) t.sdkRange.push(await directRange(from));
        t.range.push(await gatewayRange(from));
        if (!(i % 2)) t.sdkRange.push(await directRange(from));
      }
      const median = (xs: number[]) => summarize(xs).p50;
      const mibps = (secs: number) => bigSize / MiB / secs;
      const rows: string[][] = [];
      const figures: Figure[] = [];
      // The ratio is the median of the pairs' ratios, each pair run back to back: RGW's pace drifts
      // over a run (its memory fills, its collector runs), and a pair sees the same state. The ratio
      // of the two medians is given in the notes.
      const ofMedians: string[] = [];
      const line = (what: string, gateway: number[], direct: number[], unit: string, rate: (s: number) => number) => {
        const ratio = median(gateway.map((g, i) => rate(g) / rate(direct[i]!)));
        rows.push([what, `${fmt(rate(median(gateway)))} ${unit}`, `${fmt(rate(median(direct)))} ${unit}`, fmt(ratio, 2), '>= 0.80']);
        ofMedians.push(`${what} ${fmt(rate(median(gateway)) / rate(median(direct)), 2)}`);
        figures.push(figure('s3', what, 'throughput', unit, 'rate', rate(median(gateway)), [{ name: 'AWS SDK straight to RGW', value: rate(median(direct)) }]));
      };
      line(`${bigSize / MiB} MiB upload`, t.up, t.sdkUp, 'MiB/s', mibps);
      line(`${bigSize / MiB} MiB download (proxy)`, t.down, t.sdkDown, 'MiB/s', mibps);
      line('1 MiB Range read', t.range, t.sdkRange, 'reads/s', (s) => 1 / s);
      // Median CPU milliseconds per MiB of each process over the transfers of one kind.
      const perMiB = (what: string) => {
        const of = (who: 'gateway' | 'bench' | 'rgw') => fmt(summarize(cpu[what]!.map((c) => c[who])).p50 * 1000 / (bigSize / MiB), 1);
        return `${what} ${of('gateway')} / ${of('bench')} / ${of('rgw')}`;
      };

      // 1 KiB uploads at 8 connections: S3 against local disk, and the S3 round trips one costs.
      const small = async (c: HttpClient, token: string, tag: string) => {
        let n = 0;
        const until = Date.now() + (ctx.profile.name === 'quick' ? 2000 : 5000);
        const began = Date.now();
        const payload = randomBytes(1024).toString('base64').slice(0, 1024);
        await Promise.all(
          Array.from({ length: 8 }, async (_, w) => {
            for (let i = 0; Date.now() < until; i++) {
              const res = await c.request('POST', '/v1/files', {
                headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=b' },
                body: `--b\r\nContent-Disposition: form-data; name="file"; filename="${tag}-${w}-${i}.txt"\r\n\r\n${payload}\r\n--b--\r\n`,
              });
              if (res.status !== 201) throw new Error(`1 KiB upload: ${res.status}`);
              n++;
            }
          }),
        );
        return n / ((Date.now() - began) / 1000);
      };
      const onS3 = await small(client, admin.token, 's3');
      const onDisk = await small(ctx.client, ctx.adminToken, 'disk');
      const trips = { put: [] as number[], copy: [] as number[], del: [] as number[] };
      for (let i = 0; i < 50; i++) {
        let start = process.hrtime.bigint();
        await sdk.send(new PutObjectCommand({ Bucket: config.bucket, Key: `probe/${i}.part`, Body: randomBytes(1024) }));
        trips.put.push(seconds(start) * 1000);
        start = process.hrtime.bigint();
        await sdk.send(new CopyObjectCommand({ Bucket: config.bucket, Key: `probe/${i}`, CopySource: `${config.bucket}/probe/${i}.part` }));
        trips.copy.push(seconds(start) * 1000);
        start = process.hrtime.bigint();
        await sdk.send(new DeleteObjectCommand({ Bucket: config.bucket, Key: `probe/${i}.part` }));
        trips.del.push(seconds(start) * 1000);
      }
      rows.push(['1 KiB uploads, 8 connections', `${fmt(onS3)} files/s`, `${fmt(onDisk)} files/s on local disk`, fmt(onS3 / onDisk, 2), 'reported']);
      figures.push(figure('s3', '1 KiB uploads x8', 'throughput', 'files/s', 'rate', onS3, [{ name: 'local disk', value: onDisk }]));
      const ms = (xs: number[]) => fmt(summarize(xs).p50, 1);
      sdk.destroy();
      return {
        name: 's3',
        title: 'Content on S3 (one-node Ceph RGW, memstore) through the gateway against the AWS SDK straight to RGW',
        headers: ['operation', 'through the gateway', 'SDK straight to RGW', 'ratio', 'goal'],
        rows,
        notes: [
          `CPU ms per MiB, gateway / bench process (client side) / RGW daemons: ${['up', 'sdkUp', 'down', 'sdkDown'].map(perMiB).join('; ')}`,
          `the direct upload reads a stream of 64 KiB chunks, as the gateway does; from a Buffer (no copy into parts) it runs at ${fmt(mibps(median(t.sdkUpBuffer)))} MiB/s`,
          `medians of ${reps} uploads, ${downloadReps} downloads and ${12 * reps} range reads each side, after one untimed of each kind, the two sides alternating which goes first, uploads before downloads; ratio: the median of the back-to-back pairs' ratios (the ratio of the medians: ${ofMedians.join(', ')}); the gateway stages a large upload under .staging/ and copies it into place inside RGW (a copy RGW makes by reference: tens of ms for 100 MiB), the SDK writes one object`,
          `a 1 KiB upload on S3 costs one S3 round trip beside MySQL, the PutObject under its content key (p50 ${ms(trips.put)} ms), inside the owner's transaction; content over 1 MiB is staged in the bucket and costs a CopyObject (${ms(trips.copy)} ms) and a DeleteObject (${ms(trips.del)} ms) more; on disk those are a write and a rename`,
        ],
        figures,
        details: { seconds: t, cpu, trips },
      };
    });
    // The same downloads on a service with S3_DOWNLOADS=redirect: the gateway answers 302, the
    // client reads the bytes from RGW itself.
    const redirected = await withStack(ctx, { ...env, S3_PREFIX: 'redirect/', S3_DOWNLOADS: 'redirect' }, (stack, client, admin) =>
      redirectDownloads({ client, token: admin.token, sdk, bucket: config.bucket, directKey: 'direct/big-0', size: bigSize, reps: downloadReps, cpu: () => cpuNow(stack.gatewayPid, rgw.dir) }),
    );
    report.rows.splice(2, 0, redirected.row);
    report.notes.unshift(redirected.note);
    report.figures!.push(redirected.figure);
    report.details = { ...report.details, redirect: redirected.details };
    return report;
  } finally {
    await Rgw.stop(rgw.dir);
  }
}
