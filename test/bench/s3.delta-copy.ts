/**
 * `npm run build && node dist/test/bench/s3.delta-copy.js [--mib=256] [--runs=2]`
 *
 * The server side of a delta upload of a large file on S3 (a one-node Ceph RGW from scripts/rgw.sh):
 * the assembly (chunk list checked, whole SHA-256) staged then placed under a new key, with the
 * unchanged stretches copied in the bucket (UploadPartCopy) beside the same assembly staged by
 * writing every byte again; then what the other design would cost: the copies without reading the
 * copied ranges, plus reading the assembled object back whole for its SHA-256.
 */
import { createHash, randomBytes } from 'node:crypto';
import os from 'node:os';
import { Readable } from 'node:stream';
import { assembleDelta, type AssemblyReport, type DeltaBase } from '../../services/gateway/delta/delta.assembly';
import { ChunkListVerifier } from '../../services/gateway/delta/chunk-list.verifier';
import { stageDelta } from '../../services/gateway/delta/delta.staging';
import { newId } from '../../shared/ids';
import { chunksOf, DELTA_RECORD, packChunks } from '../../shared/protocol/chunking';
import type { ContentStore } from '../../shared/storage/content.store';
import type { S3BaseCopyStaging } from '../../shared/storage/s3/s3.base-copy';
import { createS3Client } from '../../shared/storage/s3/s3.client';
import { S3ContentStore } from '../../shared/storage/s3/s3.store';
import { createBucket, Rgw } from '../support/rgw';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const MiB = 1024 * 1024;
const SIZE = Number(args.mib ?? 256) * MiB;
const RUNS = Number(args.runs ?? 2);
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const ms = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;

type Segment = { copy: [number, number] } | { data: Buffer };

function body(segments: Segment[], target: Buffer): Buffer {
  const chunks = chunksOf(target);
  const head = Buffer.alloc(9);
  head[0] = DELTA_RECORD.list;
  head.writeBigUInt64BE(BigInt(chunks.length), 1);
  const parts: Buffer[] = [head, packChunks(chunks)];
  for (const s of segments) {
    const h = Buffer.alloc('copy' in s ? 17 : 9);
    h[0] = 'copy' in s ? DELTA_RECORD.copy : DELTA_RECORD.data;
    h.writeBigUInt64BE(BigInt('copy' in s ? s.copy[0] : s.data.length), 1);
    if ('copy' in s) h.writeBigUInt64BE(BigInt(s.copy[1]), 9);
    parts.push(h, ...('data' in s ? [s.data] : []));
  }
  return Buffer.concat([...parts, Buffer.of(DELTA_RECORD.end)]);
}

/** The delta body as a socket delivers it, in 64 KiB pieces. */
async function* pieces(b: Buffer): AsyncGenerator<Buffer> {
  for (let at = 0; at < b.length; at += 64 * 1024) yield b.subarray(at, at + 64 * 1024);
}

async function main(): Promise<void> {
  const rgw = await Rgw.start();
  const config = {
    bucket: 'filesync-bench',
    prefix: `delta-copy-${newId()}/`,
    endpoint: rgw.env.S3_ENDPOINT,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: rgw.env.S3_ACCESS_KEY_ID!, secretAccessKey: rgw.env.S3_SECRET_ACCESS_KEY! },
  };
  const client = createS3Client(config);
  await createBucket(client, config.bucket);
  client.destroy();
  const store = new S3ContentStore(config);
  // The same store without its copies: the assembled bytes are staged as any upload.
  const rewriting: ContentStore = new Proxy(store, { get: (t, p) => (p === 'stageFromBase' ? undefined : Reflect.get(t, p, t)) });
  try {
    const base = randomBytes(SIZE);
    const baseKey = `dev/base-${newId()}`;
    await store.place(await store.stage(Readable.from([base]), { maxBytes: SIZE }), baseKey);
    const half = Math.floor(SIZE / 2);
    const edits: Array<[string, Segment[]]> = [
      ['1 MiB over the middle', [{ copy: [0, half] }, { data: randomBytes(MiB) }, { copy: [half + MiB, SIZE - half - MiB] }]],
      ['100 bytes inserted at the start', [{ data: randomBytes(100) }, { copy: [0, SIZE] }]],
    ];
    const baseOf: DeltaBase = { size: SIZE, read: async (range) => (await store.open(baseKey)).read(range) };
    console.log(`${SIZE / MiB} MiB base on RGW; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    for (const [name, segments] of edits) {
      const target = Buffer.concat(segments.map((s) => ('copy' in s ? base.subarray(s.copy[0], s.copy[0] + s.copy[1]) : s.data)));
      const delta = body(segments, target);
      for (let run = 1; run <= RUNS; run++) {
        for (const [mode, on] of [['rewritten', rewriting], ['copied in the bucket', store]] as const) {
          const t = process.hrtime.bigint();
          const report: AssemblyReport = { chunks: [], copiedBytes: 0, literalBytes: 0 };
          const staged = await stageDelta(on, baseKey, baseOf, (b) => assembleDelta(pieces(delta), b, report, 2 * SIZE), 2 * SIZE);
          const staging = ms(t);
          const key = `dev/new-${newId()}`;
          await store.place(staged, key);
          const took = ms(t);
          if (staged.sha256 !== sha256(target)) throw new Error(`${name}: staged other bytes`);
          await store.remove(key);
          console.log(`${name}, run ${run}: ${mode}: ${took.toFixed(0)} ms (assembly and staging ${staging.toFixed(0)} ms, placing ${(took - staging).toFixed(0)} ms)`);
        }
      }
      // The other design: copies alone (no read of the copied ranges), then the assembled object read back for its SHA-256.
      const staging = store.stageFromBase(baseKey, { maxBytes: 2 * SIZE }) as S3BaseCopyStaging;
      const t = process.hrtime.bigint();
      const staged = await staging.stage(Readable.from(announced(staging, segments, base)));
      const copiesOnly = ms(t);
      const r = process.hrtime.bigint();
      const hash = createHash('sha256');
      const verifier = new ChunkListVerifier(packChunks(chunksOf(target)));
      for await (const p of await (await store.open(staged.stagingKey)).read()) {
        hash.update(p as Buffer);
        verifier.update(p as Buffer);
      }
      verifier.finish();
      const readBack = ms(r);
      if (hash.digest('hex') !== sha256(target)) throw new Error(`${name}: read back other bytes`);
      await store.discard(staged);
      console.log(`${name}: copies without reading the copied ranges ${copiesOnly.toFixed(0)} ms (new bytes from memory), then the object read back, its SHA-256 and chunk list checked ${readBack.toFixed(0)} ms (placing comes on top)`);
    }
    console.log(`load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  } finally {
    await Rgw.stop(rgw.dir);
  }
}

/** The new content's bytes from memory, each copy announced first, as the assembly does. */
async function* announced(staging: S3BaseCopyStaging, segments: Segment[], base: Buffer): AsyncGenerator<Buffer> {
  let position = 0;
  for (const s of segments) {
    const bytes = 'copy' in s ? base.subarray(s.copy[0], s.copy[0] + s.copy[1]) : s.data;
    if ('copy' in s) staging.copying(position, { start: s.copy[0], end: s.copy[0] + s.copy[1] - 1 });
    for (let at = 0; at < bytes.length; at += MiB) yield bytes.subarray(at, at + MiB);
    position += bytes.length;
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
