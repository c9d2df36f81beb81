import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { BenchContext } from './context';
import type { BenchUser } from './http.client';
import { median, must, peakRss, rateOf, smallMultipart, timedGet } from './links.tools';
import { figure, fmt, fmtBytes, fmtRatio, msSince, now, summarize, type Figure } from './stats';
import { writeRandomFile } from './transfer.plain';

const MB = 1e6;
const KiB = 1024;
const MiB = 1024 * KiB;

export interface ZipCaseInput extends BenchContext {
  user: BenchUser;
  work: string;
  rows: string[][];
  figures: Figure[];
  makeFolder(name: string, parentId?: string | null): Promise<string>;
  uploadFile(file: string, name: string, bytes: number): Promise<string>;
}

/**
 * The ZIP of a folder of 1,000 files of 100 KiB, through a folder link and through the owner's
 * GET /v1/archive, each against the owner's GET of one file of the same bytes, the three in turn;
 * then the gateway's peak RSS while a link zips 1,000 and 10,000 files.
 */
export async function zipCase(input: ZipCaseInput): Promise<Record<string, unknown>> {
  const { stack, client, profile, log, user, work, rows, figures, makeFolder, uploadFile } = input;
  const quick = profile.name === 'quick';
  const auth = { authorization: `Bearer ${user.token}` };
  const files = quick ? 200 : 1000;
  const fileBytes = 100 * KiB;
  const total = files * fileBytes;
  const folderId = await makeFolder('zipped');
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < files) {
        const i = next++;
        const { body, headers } = smallMultipart(`part-${String(i).padStart(5, '0')}.bin`, randomBytes(fileBytes), { folderId });
        const res = await client.request('POST', '/v1/files', { headers: { ...headers, ...auth }, body });
        if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${res.body.toString('utf8').slice(0, 300)}`);
      }
    }),
  );
  const whole = path.join(work, 'whole.bin');
  await writeRandomFile(whole, total);
  const wholeId = await uploadFile(whole, 'whole.bin', total);
  await fs.rm(whole, { force: true });
  const link = await must(client, 'POST', '/v1/links', user.token, { resourceId: folderId });
  // 10x the folder, as rows that share the first folder's stored content: what grows is the listing.
  const bigFolderId = await makeFolder('zipped-x10');
  const [cols] = (await stack.db.raw(
    `SELECT column_name AS c FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'resources' AND extra NOT LIKE '%GENERATED%'`,
  )) as [Array<{ c: string }>];
  const copied = cols.map((r) => r.c).filter((c) => !['id', 'parent_id', 'name'].includes(c));
  for (let k = 0; k < 10; k++) {
    await stack.db.raw(
      `INSERT INTO resources (id, parent_id, name, ${copied.join(', ')})
       SELECT MD5(CONCAT(id, ?)), ?, CONCAT(?, name), ${copied.join(', ')} FROM resources WHERE parent_id = ? AND type = 'file'`,
      [k, bigFolderId, `${k}-`, folderId],
    );
  }
  const bigLink = await must(client, 'POST', '/v1/links', user.token, { resourceId: bigFolderId });

  const zipGet = async (url: string, headers: Record<string, string>): Promise<number> => {
    const t = now();
    const res = await client.request('GET', url, { headers, discardBody: true });
    const ms = msSince(t);
    if (res.status !== 200 || res.bytes < total) throw new Error(`archive ${url}: ${res.status}, ${res.bytes} bytes`);
    return ms;
  };
  const reps = quick ? 3 : 15;
  const times = { one: [] as number[], link: [] as number[], owner: [] as number[] };
  const ratios = { link: [] as number[], owner: [] as number[] };
  for (let rep = -1; rep < reps; rep++) {
    const one = await timedGet(client, `/v1/files/${wholeId}/content`, auth, total);
    const viaLink = await zipGet(`/v1/public/${link.token}/archive`, {});
    const owner = await zipGet(`/v1/archive?ids=${folderId}`, auth);
    if (rep < 0) continue;
    times.one.push(one);
    times.link.push(viaLink);
    times.owner.push(owner);
    ratios.link.push(one / viaLink);
    ratios.owner.push(one / owner);
  }
  // Rates over the files' bytes (the ZIP's own records are extra work the archive does for free here).
  const oneRate = rateOf(total, times.one);
  const ceiling = `${fmt(oneRate)} (owner's GET of one ${fmt(total / MiB, 1)} MiB file)`;
  for (const [kind, label] of [['link', 'folder link'], ['owner', 'owner, GET /v1/archive']] as const) {
    const rate = rateOf(total, times[kind]);
    const name = `ZIP of ${fmt(files, 0)} x 100 KiB, ${label}`;
    log(`links: ${name}: ${fmt(rate)} MB/s, one file ${fmt(oneRate)} MB/s`);
    rows.push([name, "MB/s (files' bytes)", fmt(rate), ceiling, fmtRatio(rate, oneRate, 'rate'), `${fmt(median(ratios[kind]) * 100, 0)}%`, '>= 80%']);
    figures.push(figure('links', name, 'throughput', 'MB/s', 'rate', rate, [{ name: 'the same bytes as one file', value: oneRate }]));
  }

  const memory: Record<string, { rest: number; peak: number; ms: number; bytes: number }> = {};
  for (const [n, token] of [[files, link.token], [files * 10, bigLink.token]] as const) {
    let ms = 0;
    let bytes = 0;
    const m = await peakRss(stack.gatewayPid, async () => {
      const t = now();
      const res = await client.request('GET', `/v1/public/${token}/archive`, { discardBody: true });
      ms = msSince(t);
      bytes = res.bytes;
      if (res.status !== 200 || res.bytes < n * fileBytes) throw new Error(`archive of ${n}: ${res.status}, ${res.bytes} bytes`);
    });
    memory[n] = { ...m, ms, bytes };
    log(`links: ZIP of ${n} files: peak RSS ${fmtBytes(m.peak)} (rest ${fmtBytes(m.rest)}), ${fmt(bytes / MB / (ms / 1000))} MB/s`);
    rows.push([`ZIP of ${fmt(n, 0)} files`, 'gateway peak RSS', fmtBytes(m.peak), `rest ${fmtBytes(m.rest)}`, `+${fmtBytes(m.peak - m.rest)}`, `${fmt(bytes / MB / (ms / 1000))} MB/s`, 'flat']);
    figures.push(figure('links', `ZIP of ${n} files`, 'gateway peak RSS', 'bytes', 'size', m.peak, [{ name: 'gateway at rest', value: m.rest }]));
  }
  return { files, fileBytes, oneFile: summarize(times.one), link: summarize(times.link), owner: summarize(times.owner), perRepRatios: ratios, memory };
}
