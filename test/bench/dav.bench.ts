import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser, type HttpClient } from './http.client';
import { memoryOf, resetPeakMemory } from './stack';
import { figure, fmt, fmtRatio, msSince, now, summarize, type Figure, type ScenarioReport } from './stats';
import { multipart, SEND_CHUNK, writeRandomFile } from './transfer.plain';

const run = promisify(execFile);
const MB = 1e6;
const MiB = 1024 * 1024;
const randomId = () => randomBytes(16).toString('hex');

/** A folder of `count` files (without content: the listing is what is measured), by sync batches of 1,000. */
async function seedFolder(client: HttpClient, user: BenchUser, name: string, count: number): Promise<string> {
  const folderId = randomId();
  let opId = Date.now() * 1000;
  const submit = async (ops: unknown[]) => {
    const res = await client.json('POST', '/v1/sync/ops', { ops }, user.token);
    if (res.status !== 200 || res.body.failed) throw new Error(`seeding failed: ${res.status} ${res.text.slice(0, 200)}`);
  };
  await submit([{ opId: opId++, type: 'create', resourceId: folderId, payload: { resourceType: 'folder', name } }]);
  for (let i = 0; i < count; i += 1000) {
    const ops = Array.from({ length: Math.min(1000, count - i) }, (_, k) => ({
      opId: opId++,
      type: 'create',
      resourceId: randomId(),
      payload: { resourceType: 'file', name: `file ${String(i + k).padStart(6, '0')}.txt`, parentId: folderId, size: 4096 },
    }));
    await submit(ops);
  }
  return folderId;
}

/** Runs `task` `reps` times after one warm-up; the milliseconds of each. */
async function timed(reps: number, task: () => Promise<void>): Promise<number[]> {
  await task();
  const ms: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = now();
    await task();
    ms.push(msSince(t));
  }
  return ms;
}

/** The gateway's peak resident memory above its resident memory before `task`, in MiB (NaN when /proc refuses the reset). */
async function peakGrowth(pid: number, task: () => Promise<void>): Promise<number> {
  const before = await memoryOf(pid);
  if (!(await resetPeakMemory(pid))) return NaN;
  await task();
  return ((await memoryOf(pid)).hwm - before.rss) / MiB;
}

/**
 * WebDAV (docs/WEBDAV.md) beside the API it translates to, in the same run:
 * - PROPFIND Depth 1 of a folder of 10,000 files against `GET /v1/files?limit=1000` x 10 (the same
 *   members through the API), and the gateway's peak memory growth for 1,000 and 10,000 members;
 * - a large PUT and GET over WebDAV against `PUT /v1/files/:id/content` and its download;
 * - rclone copying 1,000 files of 4 KiB, files per second against multipart `POST /v1/files` at the
 *   same concurrency.
 */
export async function runDav(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const quick = profile.name === 'quick';
  const [user] = (await provisionUsers(client, ctx.adminToken, ['dav'])) as [BenchUser];
  const created = await client.json('POST', '/v1/app-passwords', { name: 'bench', currentPassword: user.password }, user.token);
  if (created.status !== 201) throw new Error(`app password: ${created.status} ${created.text}`);
  const basic = `Basic ${Buffer.from(`${user.username}:${created.body.password}`).toString('base64')}`;
  const bearer = `Bearer ${user.token}`;
  const figures: Figure[] = [];
  const rows: string[][] = [];
  const details: Record<string, unknown> = {};

  // 1. Listing.
  const members = quick ? 2_000 : 10_000;
  const reps = quick ? 3 : 10;
  const big = await seedFolder(client, user, 'big', members);
  await seedFolder(client, user, 'small', members / 10);
  const propfind = (folder: string) => async () => {
    const res = await client.request('PROPFIND', `/dav/${folder}/`, { headers: { authorization: basic, depth: '1' }, discardBody: true });
    if (res.status !== 207) throw new Error(`PROPFIND: ${res.status}`);
  };
  const pages = async () => {
    for (let offset = 0; offset < members; offset += 1000) {
      const res = await client.request('GET', `/v1/files?folderId=${big}&limit=1000&offset=${offset}`, { headers: { authorization: bearer }, discardBody: true });
      if (res.status !== 200) throw new Error(`GET /v1/files: ${res.status}`);
    }
  };
  const davList = summarize(await timed(reps, propfind('big')));
  const apiList = summarize(await timed(reps, pages));
  const pid = stack.gatewayPid;
  const growthSmall = await peakGrowth(pid, propfind('small'));
  const growthBig = await peakGrowth(pid, propfind('big'));
  log(`dav: PROPFIND Depth 1 of ${members}: p50 ${fmt(davList.p50)} ms; GET /v1/files x${members / 1000}: p50 ${fmt(apiList.p50)} ms`);
  figures.push(figure('dav', `PROPFIND Depth 1, ${members} members`, 'p50', 'ms', 'time', davList.p50, [{ name: `GET /v1/files?limit=1000 x${members / 1000}`, value: apiList.p50 }]));
  rows.push([`PROPFIND Depth 1, ${members} files`, `${fmt(davList.p50)} ms p50`, `${fmt(apiList.p50)} ms p50 (GET /v1/files?limit=1000 x${members / 1000})`, fmtRatio(davList.p50, apiList.p50, 'time')]);
  rows.push([`gateway peak memory growth, PROPFIND of ${members / 10} / ${members}`, `${fmt(growthSmall)} / ${fmt(growthBig)} MiB`, '', '']);
  details.propfind = { dav: davList, api: apiList, growthMiB: { small: growthSmall, big: growthBig } };

  // 2. Transfer.
  const bytes = quick ? 10 * MiB : 100 * MiB;
  const transferReps = quick ? 2 : 5;
  const work = path.join(stack.dir, 'bench-dav');
  await fs.mkdir(work, { recursive: true });
  const src = path.join(work, 'source.bin');
  await writeRandomFile(src, bytes);
  const raw = () => createReadStream(src, { highWaterMark: SEND_CHUNK });
  const form = multipart(src, 'api.bin', bytes);
  const first = await client.request('POST', '/v1/files', { headers: { ...form.headers, authorization: bearer }, body: form.body });
  if (first.status !== 201) throw new Error(`upload: ${first.status}`);
  const apiId = JSON.parse(first.body.toString()).id as string;
  const rateOf = (ms: number[]) => (bytes * ms.length) / MB / (ms.reduce((a, b) => a + b, 0) / 1000);
  const expect = (status: number, wanted: number[], what: string) => {
    if (!wanted.includes(status)) throw new Error(`${what}: ${status}`);
  };
  // Each repetition runs the four transfers in turn, so a change of load on the machine weighs on both paths alike.
  const put = (url: string, auth: string, ok: number[]) => async () => {
    const res = await client.request('PUT', url, { headers: { authorization: auth, 'content-length': bytes }, body: raw() });
    expect(res.status, ok, `PUT ${url}`);
  };
  const get = (url: string, auth: string) => async () => {
    const res = await client.request('GET', url, { headers: { authorization: auth }, discardBody: true });
    expect(res.status, [200], `GET ${url}`);
  };
  const transfers = [put('/dav/big.bin', basic, [201, 204]), put(`/v1/files/${apiId}/content`, bearer, [200]), get('/dav/big.bin', basic), get(`/v1/files/${apiId}/content`, bearer)];
  const samples: number[][] = transfers.map(() => []);
  for (let rep = -1; rep < transferReps; rep++) {
    for (const [i, transfer] of transfers.entries()) {
      const t = now();
      await transfer();
      if (rep >= 0) samples[i]!.push(msSince(t));
    }
  }
  const [davPut, apiPut, davGet, apiGet] = samples.map(rateOf) as [number, number, number, number];
  const size = `${bytes / MiB} MiB`;
  figures.push(figure('dav', `${size} PUT`, 'throughput', 'MB/s', 'rate', davPut, [{ name: 'PUT /v1/files/:id/content', value: apiPut }]));
  figures.push(figure('dav', `${size} GET`, 'throughput', 'MB/s', 'rate', davGet, [{ name: 'GET /v1/files/:id/content', value: apiGet }]));
  rows.push([`${size} PUT`, `${fmt(davPut)} MB/s`, `${fmt(apiPut)} MB/s (PUT /v1/files/:id/content)`, fmtRatio(davPut, apiPut, 'rate')]);
  rows.push([`${size} GET`, `${fmt(davGet)} MB/s`, `${fmt(apiGet)} MB/s (GET /v1/files/:id/content)`, fmtRatio(davGet, apiGet, 'rate')]);
  log(`dav: ${size} PUT ${fmt(davPut)} MB/s (API ${fmt(apiPut)}), GET ${fmt(davGet)} MB/s (API ${fmt(apiGet)})`);

  // 3. Many small files: rclone over WebDAV against multipart uploads, 8 at a time each.
  const count = quick ? 200 : 1000;
  const tree = path.join(work, 'small');
  await fs.mkdir(tree, { recursive: true });
  await Promise.all(Array.from({ length: count }, (_, i) => fs.writeFile(path.join(tree, `f${i}.bin`), randomBytes(4096))));
  const obscured = (await run('rclone', ['obscure', '--', created.body.password])).stdout.trim();
  const env = {
    ...process.env,
    RCLONE_CONFIG: path.join(work, 'rclone.conf'),
    RCLONE_CONFIG_BENCH_TYPE: 'webdav',
    RCLONE_CONFIG_BENCH_URL: `${stack.baseUrl}/dav/`,
    RCLONE_CONFIG_BENCH_VENDOR: 'other',
    RCLONE_CONFIG_BENCH_USER: user.username,
    RCLONE_CONFIG_BENCH_PASS: obscured,
  };
  await fs.writeFile(env.RCLONE_CONFIG, '');
  let t = now();
  await run('rclone', ['copy', tree, 'bench:rclone', '--transfers', '8'], { env, maxBuffer: 16 * MiB });
  const rcloneRate = count / (msSince(t) / 1000);
  let next = 0;
  t = now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const file = path.join(tree, `f${next++}.bin`);
        const form = multipart(file, `m-${path.basename(file)}`, 4096);
        const res = await client.request('POST', '/v1/files', { headers: { ...form.headers, authorization: bearer }, body: form.body });
        expect(res.status, [201], 'multipart upload');
      }
    }),
  );
  const multipartRate = count / (msSince(t) / 1000);
  figures.push(figure('dav', `rclone copy, ${count} x 4 KiB`, 'files/s', 'files/s', 'rate', rcloneRate, [{ name: 'POST /v1/files, 8 at a time', value: multipartRate }]));
  rows.push([`rclone copy ${count} x 4 KiB`, `${fmt(rcloneRate)} files/s`, `${fmt(multipartRate)} files/s (POST /v1/files, 8 at a time)`, fmtRatio(rcloneRate, multipartRate, 'rate')]);
  log(`dav: rclone ${fmt(rcloneRate)} files/s, multipart ${fmt(multipartRate)} files/s`);
  await fs.rm(work, { recursive: true, force: true });

  return {
    name: 'dav',
    title: 'WebDAV beside the API',
    headers: ['case', 'WebDAV', 'API', 'ratio'],
    rows,
    notes: [
      'PROPFIND streams its multistatus a page of 500 members at a time. The peak memory growth is read from VmHWM, which also counts garbage not yet collected (each response is garbage once written), so it is an upper bound, not what is retained.',
      'The rclone rate includes its start and its listing of the destination; the multipart rate is requests alone.',
    ],
    figures,
    details,
  };
}
