import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser } from './http.client';
import { median, must, peakRss, rateOf, smallMultipart, timedGet } from './links.tools';
import { zipCase } from './links.zip';
import { LOGIN_CONCURRENCY } from './stack';
import { figure, fmt, fmtBytes, fmtRatio, msSince, now, summarize, type Figure, type LatencySummary, type ScenarioReport } from './stats';
import { multipart, writeRandomFile } from './transfer.plain';

const KiB = 1024;
const MiB = 1024 * KiB;

/** `concurrency` loops calling `call` for `durationMs`: calls per second and latencies. */
async function loops(concurrency: number, durationMs: number, call: () => Promise<void>): Promise<LatencySummary & { perSec: number }> {
  const latencies: number[] = [];
  const start = now();
  const deadline = Date.now() + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < deadline) {
        const t = now();
        await call();
        latencies.push(msSince(t));
      }
    }),
  );
  return { perSec: latencies.length / (msSince(start) / 1000), ...summarize(latencies) };
}

/**
 * Share links, each beside its ceiling in the same run: a link download against the owner's own
 * download of the same file, an upload through an upload link against the owner's multipart upload,
 * a folder's ZIP against the same bytes as one file (with the gateway's peak RSS for two folder
 * sizes), and a password unlock against a login.
 */
export async function runLinks(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const quick = profile.name === 'quick';
  const [user] = (await provisionUsers(client, ctx.adminToken, ['linker'])) as [BenchUser];
  const auth = { authorization: `Bearer ${user.token}` };
  const work = path.join(stack.dir, 'bench-links');
  await fs.mkdir(work, { recursive: true });
  const rows: string[][] = [];
  const figures: Figure[] = [];
  const details: Record<string, unknown> = {};
  const notes: string[] = [];
  const pid = stack.gatewayPid;

  const uploadFile = async (file: string, name: string, bytes: number): Promise<string> => {
    const { body, headers } = multipart(file, name, bytes);
    const res = await client.request('POST', '/v1/files', { headers: { ...headers, ...auth }, body });
    if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.body.toString('utf8').slice(0, 300)}`);
    return (JSON.parse(res.body.toString('utf8')) as { id: string }).id;
  };
  let opId = 1;
  const makeFolder = async (name: string, parentId: string | null = null): Promise<string> => {
    const id = randomBytes(16).toString('hex');
    const res = await must(client, 'POST', '/v1/sync/ops', user.token, { ops: [{ opId: opId++, type: 'create', resourceId: id, payload: { resourceType: 'folder', name, parentId } }] });
    if (res.failed) throw new Error(`folder not made: ${JSON.stringify(res)}`);
    return id;
  };

  // 1. A 100 MiB download: through a read link, and the owner's own, alternating.
  {
    const bytes = (quick ? 20 : 100) * MiB;
    const label = `${bytes / MiB} MiB`;
    // Many short reps: a median of 21 holds still where a mean of 9 swings by 20% from run to run.
    const reps = quick ? 3 : 21;
    const src = path.join(work, 'big.bin');
    await writeRandomFile(src, bytes);
    const id = await uploadFile(src, 'big.bin', bytes);
    await fs.rm(src, { force: true });
    const link = await must(client, 'POST', '/v1/links', user.token, { resourceId: id });
    const own: number[] = [];
    const viaLink: number[] = [];
    const ratios: number[] = [];
    for (let rep = -1; rep < reps; rep++) {
      // Each goes first every other rep: neither always runs right after the other.
      const owner = () => timedGet(client, `/v1/files/${id}/content`, auth, bytes);
      const throughLink = () => timedGet(client, `/v1/public/${link.token}/content`, {}, bytes);
      let a: number;
      let b: number;
      if (rep % 2 === 0) {
        a = await owner();
        b = await throughLink();
      } else {
        b = await throughLink();
        a = await owner();
      }
      if (rep < 0) continue;
      own.push(a);
      viaLink.push(b);
      ratios.push(a / b);
    }
    const [ownRate, linkRate] = [rateOf(bytes, own), rateOf(bytes, viaLink)];
    log(`links: ${label} download: link ${fmt(linkRate)} MB/s, owner ${fmt(ownRate)} MB/s`);
    rows.push([`download ${label}`, 'MB/s', fmt(linkRate), `${fmt(ownRate)} (owner's GET /v1/files/:id/content)`, fmtRatio(linkRate, ownRate, 'rate'), `${fmt(median(ratios) * 100, 0)}%`, '>= 95%']);
    figures.push(figure('links', `download ${label}`, 'throughput', 'MB/s', 'rate', linkRate, [{ name: "owner's own download", value: ownRate }]));
    details.download = { bytes, own: summarize(own), link: summarize(viaLink), perRepRatios: ratios };
  }

  // 2. A 1 KiB upload: through an upload link, and the owner's multipart POST /v1/files, in alternating blocks.
  {
    const content = randomBytes(KiB);
    const dropId = await makeFolder('drop');
    const ownId = await makeFolder('own');
    const link = await must(client, 'POST', '/v1/links', user.token, { resourceId: dropId, access: 'upload' });
    const blocks = quick ? 4 : 10;
    const perBlock = 20;
    const own: number[] = [];
    const viaLink: number[] = [];
    let n = 0;
    for (let block = -1; block < blocks; block++) {
      for (const target of ['own', 'link'] as const) {
        for (let i = 0; i < perBlock; i++) {
          const { body, headers } = smallMultipart(`f-${n++}.bin`, content, target === 'own' ? { folderId: ownId } : {});
          const url = target === 'own' ? '/v1/files' : `/v1/public/${link.token}/files`;
          const t = now();
          const res = await client.request('POST', url, { headers: target === 'own' ? { ...headers, ...auth } : headers, body });
          const ms = msSince(t);
          if (res.status !== 201) throw new Error(`1 KiB upload (${target}) failed: ${res.status} ${res.body.toString('utf8').slice(0, 300)}`);
          if (block >= 0) (target === 'own' ? own : viaLink).push(ms);
        }
      }
    }
    const perSec = (ms: number[]) => (ms.length * 1000) / ms.reduce((a, b) => a + b, 0);
    const [ownRate, linkRate] = [perSec(own), perSec(viaLink)];
    log(`links: 1 KiB upload: link ${fmt(linkRate)}/s, owner ${fmt(ownRate)}/s`);
    rows.push(['upload 1 KiB, one at a time', 'uploads/s', fmt(linkRate), `${fmt(ownRate)} (owner's POST /v1/files, multipart)`, fmtRatio(linkRate, ownRate, 'rate'), '', '>= 90%']);
    rows.push(['', 'latency p50 / p99 ms', `${fmt(summarize(viaLink).p50)} / ${fmt(summarize(viaLink).p99)}`, `${fmt(summarize(own).p50)} / ${fmt(summarize(own).p99)}`, fmtRatio(summarize(viaLink).p50, summarize(own).p50, 'time'), '', '']);
    figures.push(figure('links', 'upload 1 KiB', 'throughput', 'uploads/s', 'rate', linkRate, [{ name: "owner's multipart upload", value: ownRate }]));
    details.upload = { own: summarize(own), link: summarize(viaLink) };
  }

  // 3. ZIP of a folder of 1,000 files of 100 KiB against the same bytes as one file; peak RSS at 1,000 and 10,000 files.
  details.zip = await zipCase({ ...ctx, user, work, rows, figures, makeFolder, uploadFile });

  // 4. Unlock with a password against a login, LOGIN_CONCURRENCY clients each; then a burst of unlocks and the peak RSS.
  {
    const fileId = await uploadFile(await (async () => {
      const f = path.join(work, 'tiny.bin');
      await fs.writeFile(f, 'x');
      return f;
    })(), 'tiny.bin', 1);
    const link = await must(client, 'POST', '/v1/links', user.token, { resourceId: fileId, password: 'bench link password' });
    const json = { 'content-type': 'application/json' };
    const statuses = new Map<string, number>();
    const call = (what: string, url: string, body: string, expect: number) => async () => {
      const res = await client.request('POST', url, { headers: json, body });
      if (res.status !== expect) statuses.set(`${what} ${res.status}`, (statuses.get(`${what} ${res.status}`) ?? 0) + 1);
    };
    const loginBody = JSON.stringify({ username: user.username, password: user.password, deviceId: user.deviceId });
    const unlockRight = call('unlock', `/v1/public/${link.token}/unlock`, JSON.stringify({ password: 'bench link password' }), 200);
    const unlockWrong = call('wrong', `/v1/public/${link.token}/unlock`, JSON.stringify({ password: 'not the password at all' }), 401);
    const loginOnce = call('login', '/v1/auth/login', loginBody, 200);
    const duration = quick ? 1500 : 4000;
    await Promise.all([unlockRight(), loginOnce(), unlockWrong()]);
    // Alternating halves, so a burst of other work on the machine weighs on all three.
    const halves = { login: [] as Array<LatencySummary & { perSec: number }>, right: [] as Array<LatencySummary & { perSec: number }>, wrong: [] as Array<LatencySummary & { perSec: number }> };
    for (let h = 0; h < 2; h++) {
      halves.login.push(await loops(LOGIN_CONCURRENCY, duration / 2, loginOnce));
      halves.right.push(await loops(LOGIN_CONCURRENCY, duration / 2, unlockRight));
      halves.wrong.push(await loops(LOGIN_CONCURRENCY, duration / 2, unlockWrong));
    }
    const avg = (xs: Array<{ perSec: number }>) => xs.reduce((a, x) => a + x.perSec, 0) / xs.length;
    const p50 = (xs: Array<{ p50: number }>) => median(xs.map((x) => x.p50));
    const [login, right, wrong] = [avg(halves.login), avg(halves.right), avg(halves.wrong)];
    const burst = quick ? 20 : 50;
    const mem = await peakRss(pid, async () => {
      await Promise.all(Array.from({ length: burst }, () => unlockRight()));
    });
    const expectedPeak = mem.rest + LOGIN_CONCURRENCY * 64 * MiB;
    log(`links: unlock ${fmt(right)}/s (wrong ${fmt(wrong)}/s), login ${fmt(login)}/s; burst of ${burst}: peak RSS ${fmtBytes(mem.peak)}`);
    rows.push([`unlock, ${LOGIN_CONCURRENCY} clients`, 'unlocks/s', fmt(right), `${fmt(login)} (POST /v1/auth/login, same clients)`, fmtRatio(right, login, 'rate'), '', 'about 100%']);
    rows.push(['', 'latency p50 ms: right / wrong password', `${fmt(p50(halves.right))} / ${fmt(p50(halves.wrong))}`, `${fmt(p50(halves.login))} (login)`, fmtRatio(p50(halves.wrong), p50(halves.right), 'time'), '', 'wrong = right']);
    rows.push([`burst of ${burst} unlocks`, 'gateway peak RSS', fmtBytes(mem.peak), `${fmtBytes(expectedPeak)} (rest + ${LOGIN_CONCURRENCY} x 64 MiB)`, fmtRatio(mem.peak, expectedPeak, 'size'), '', '<= 1x']);
    figures.push(
      figure('links', `unlock, ${LOGIN_CONCURRENCY} clients`, 'throughput', 'unlocks/s', 'rate', right, [{ name: 'login, same clients', value: login }]),
      figure('links', `wrong password, ${LOGIN_CONCURRENCY} clients`, 'latency p50', 'ms', 'time', p50(halves.wrong), [{ name: 'right password', value: p50(halves.right) }]),
      figure('links', `burst of ${burst} unlocks`, 'gateway peak RSS', 'bytes', 'size', mem.peak, [{ name: `rest + ${LOGIN_CONCURRENCY} x 64 MiB`, value: expectedPeak }]),
    );
    details.unlock = { halves, unexpectedStatuses: Object.fromEntries(statuses), burst: { n: burst, ...mem, expectedPeak } };
    if (statuses.size > 0) notes.push(`Unexpected answers: ${JSON.stringify(Object.fromEntries(statuses))}.`);
  }
  await fs.rm(work, { recursive: true, force: true });

  return {
    name: 'links',
    title: 'Share links, each beside its ceiling in the same run (MB/s = 10^6 bytes/s, one request at a time unless said)',
    headers: ['case', 'metric', 'link', 'ceiling', 'ratio', 'median of per-rep ratios', 'goal'],
    rows,
    notes: [
      'Download: GET /v1/public/:token/content of a read link and the owner\'s GET /v1/files/:id/content of the same file, alternating, each first every other rep, one warm-up of each, 21 reps; the body is read and discarded by the client. Rates are of the median transfer (a mean lets one slow rep of this host decide).',
      'Upload: POST /v1/public/:token/files of an upload link and the owner\'s POST /v1/files (multipart, into a folder), 20 at a time of each in turn, unique names.',
      'ZIP: GET /v1/public/:token/archive of a folder of 100 KiB files (stored entries) and the owner\'s GET /v1/archive?ids= of it, against the owner\'s GET of one file holding as many bytes, the three in turn, 15 reps; the rate is of the median transfer and counts the files\' bytes. The 10x folder holds rows that share the first folder\'s stored content, so what grows is the listing; peak RSS is VmHWM after a reset and VmRSS sampled every 5 ms.',
      `Unlock: POST /v1/public/:token/unlock and POST /v1/auth/login, ${LOGIN_CONCURRENCY} clients each (LOGIN_CONCURRENCY=${LOGIN_CONCURRENCY}), alternating halves; both verify one Argon2id hash (m=64 MiB, t=1, p=4).`,
      ...notes,
    ],
    figures,
    details,
  };
}
