/**
 * `npm run build && node dist/test/bench/upload.anatomy.js [--s3]`
 *
 * Where the time of one small (1 KiB) multipart upload goes, with the gateway in this process on a
 * database of its own: every SQL statement of one upload with its round-trip time and its offset from
 * the request's start, the derived rows it writes (search index, counters), then the rate of
 * sequential uploads and of 8 connections. `--s3` runs the gateway on the suite's kind of RGW
 * (started here with scripts/rgw.sh) instead of the local disk. Not part of `npm run bench`: it
 * reports, it does not compare.
 */
import { randomBytes } from 'node:crypto';
import { createTestEnv, startGateway, ADMIN } from '../support/harness';
import { createBucket, Rgw, TEST_BUCKET } from '../support/rgw';
import { createS3Client } from '../../shared/storage/s3/s3.client';
import { HttpClient, login } from './http.client';
import { fmt, summarize } from './stats';

interface Statement {
  sql: string;
  startMs: number;
  ms: number;
}

const DERIVED_TABLES = ['search_grams', 'search_positions', 'folder_file_counts', 'operation_traces', 'file_versions'];

async function main(): Promise<void> {
  const onS3 = process.argv.includes('--s3');
  const rgw = onS3 ? await Rgw.start() : undefined;
  if (rgw) {
    rgw.export();
    const sdk = createS3Client({ bucket: TEST_BUCKET, prefix: '', endpoint: rgw.env.S3_ENDPOINT!, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: rgw.env.S3_ACCESS_KEY_ID!, secretAccessKey: rgw.env.S3_SECRET_ACCESS_KEY! } });
    await createBucket(sdk);
    sdk.destroy();
  }
  const env = await createTestEnv(onS3 ? { STORAGE_DRIVER: 's3' } : {});
  const gateway = await startGateway(env);
  const client = new HttpClient(gateway.baseUrl);
  try {
    const { token } = await login(client, ADMIN.username, ADMIN.password);
    const payload = randomBytes(768).toString('base64');
    let n = 0;
    const upload = async () => {
      const res = await client.request('POST', '/v1/files', {
        headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=b' },
        body: `--b\r\nContent-Disposition: form-data; name="file"; filename="small-${n++}.txt"\r\n\r\n${payload}\r\n--b--\r\n`,
      });
      if (res.status !== 201) throw new Error(`upload: ${res.status} ${res.body.toString()}`);
    };
    for (let i = 0; i < 30; i++) await upload();

    // One upload's statements, timed from the knex events.
    const statements: Statement[] = [];
    const open = new Map<string, { sql: string; at: bigint }>();
    let began = process.hrtime.bigint();
    const since = (t: bigint) => Number(t - began) / 1e6;
    const onQuery = (q: { __knexQueryUid: string; sql: string }) => open.set(q.__knexQueryUid, { sql: q.sql, at: process.hrtime.bigint() });
    const onDone = (_r: unknown, q: { __knexQueryUid: string }) => {
      const o = open.get(q.__knexQueryUid);
      if (o) statements.push({ sql: o.sql, startMs: since(o.at), ms: Number(process.hrtime.bigint() - o.at) / 1e6 });
    };
    const counts = async () => Object.fromEntries(await Promise.all(DERIVED_TABLES.map(async (t) => [t, Number(((await env.db(t).count({ c: '*' })) as Array<{ c: number }>)[0]!.c)] as const)));
    const before = await counts();
    env.db.on('query', onQuery).on('query-response', onDone);
    began = process.hrtime.bigint();
    await upload();
    const total = since(process.hrtime.bigint());
    env.db.off('query', onQuery).off('query-response', onDone);
    const after = await counts();
    console.log(`one 1 KiB upload (${onS3 ? 'S3' : 'local disk'}): ${fmt(total)} ms, ${statements.length} statements`);
    for (const s of statements) console.log(`  at ${fmt(s.startMs, 2).padStart(7)} ms  ${fmt(s.ms, 2).padStart(6)} ms  ${s.sql.slice(0, 150)}`);
    console.log(`  rows written: ${DERIVED_TABLES.map((t) => `${t} +${after[t]! - before[t]!}`).join(', ')}`);

    const sequential: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t = process.hrtime.bigint();
      await upload();
      sequential.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    const s = summarize(sequential);
    console.log(`sequential: p50 ${fmt(s.p50)} ms, p99 ${fmt(s.p99)} ms`);
    const until = Date.now() + 4000;
    const start = Date.now();
    const cpu = process.cpuUsage();
    let done = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (Date.now() < until) {
        await upload();
        done++;
      }
    }));
    const used = process.cpuUsage(cpu);
    console.log(`8 connections: ${fmt(done / ((Date.now() - start) / 1000))} uploads/s, ${fmt((used.user + used.system) / 1000 / done, 2)} ms of CPU per upload (gateway and load generator, this process)`);
  } finally {
    client.close();
    await gateway.close();
    await env.dropAll();
    if (rgw) await Rgw.stop(rgw.dir);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
