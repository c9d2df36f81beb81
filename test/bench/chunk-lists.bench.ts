import { execFileSync } from 'node:child_process';
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import type { BenchContext } from './context';
import { HttpClient, provisionUsers, type BenchUser } from './http.client';
import { freePort, gatewayReady } from './stack';
import { figure, fmt, percentile, type Figure, type ScenarioReport } from './stats';
import { multipart, SEND_CHUNK, writeRandomFile } from './transfer.plain';

/**
 * What making chunk lists ahead costs whole uploads (CHUNK_LISTS_AHEAD, docs/SYNC-CLIENT.md): two
 * gateways on the same database, store and workers, one asking the workers for the list of each
 * large content it commits and one not, take the same uploads (multipart POST /files, PUT content,
 * tus in one PATCH) in alternating blocks: the uploads' own rate with the workers cutting beside
 * them, and how long the lists take to be ready after the uploads.
 */
const MiB = 1024 * 1024;
const MB = 1e6;

type Method = 'multipart' | 'PUT' | 'tus';
const METHODS: Method[] = ['multipart', 'PUT', 'tus'];

async function upload(client: HttpClient, token: string, method: Method, src: string, bytes: number, fileId: string): Promise<string> {
  const auth = { authorization: `Bearer ${token}` };
  const name = `ab-${Math.random().toString(36).slice(2)}.bin`;
  if (method === 'multipart') {
    const body = multipart(src, name, bytes);
    const res = await client.request('POST', '/v1/files', { headers: { ...auth, ...body.headers }, body: body.body });
    if (res.status !== 201) throw new Error(`multipart upload: ${res.status} ${res.body.toString().slice(0, 200)}`);
    return JSON.parse(res.body.toString()).id as string;
  }
  if (method === 'PUT') {
    const res = await client.request('PUT', `/v1/files/${fileId}/content`, {
      headers: { ...auth, 'content-type': 'application/octet-stream', 'content-length': bytes },
      body: createReadStream(src, { highWaterMark: SEND_CHUNK }),
    });
    if (res.status !== 200) throw new Error(`PUT content: ${res.status} ${res.body.toString().slice(0, 200)}`);
    return fileId;
  }
  const tus = { ...auth, 'tus-resumable': '1.0.0' };
  const created = await client.request('POST', '/v1/uploads', { headers: { ...tus, 'upload-length': bytes, 'upload-metadata': `name ${Buffer.from(name).toString('base64')}` } });
  if (created.status !== 201) throw new Error(`tus creation: ${created.status}`);
  const res = await client.request('PATCH', String(created.headers.location), {
    headers: { ...tus, 'upload-offset': 0, 'content-type': 'application/offset+octet-stream', 'content-length': bytes },
    body: createReadStream(src, { highWaterMark: SEND_CHUNK }),
  });
  if (res.status !== 200) throw new Error(`tus PATCH: ${res.status}`);
  return String(res.headers['upload-id'] ?? '');
}

export async function runChunkLists(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const quick = profile.name === 'quick';
  const sizes = [
    { label: '100 MiB', bytes: 100 * MiB, perBlock: quick ? 2 : 3, blocks: quick ? 2 : 5 },
    // One upload a side in turn: a 1 KiB upload waits on its commit's flush, whose latency here swings
    // by more than the goal's margin within seconds, so only sides taking turns upload by upload share it.
    { label: '1 KiB', bytes: 1024, perBlock: 1, blocks: quick ? 200 : 800 },
  ];
  const sides = [
    { name: 'lists ahead', env: 'true' },
    { name: 'no lists ahead', env: 'false' },
  ];
  const gateways = [];
  for (const side of sides) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    gateways.push({ ...side, url, proc: await stack.launch('gateway', `lists-${side.env}`, { PORT: String(port), CHUNK_LISTS_AHEAD: side.env, MAX_VERSIONS: '1' }, () => gatewayReady(url)) });
  }
  // A user a side: the lists side's uploads are the only ones whose lists are waited for.
  const users = (await provisionUsers(client, ctx.adminToken, ['listsahead', 'nolistsahead'])) as [BenchUser, BenchUser];
  const work = path.join(stack.dir, 'bench-chunk-lists');
  await fs.mkdir(work, { recursive: true });
  const rows: string[][] = [];
  const figures: Figure[] = [];
  const details: Record<string, unknown> = {};
  /** Waits until the workers hold a list for every large content the lists side committed so far (or 60 s). */
  const listsDone = async () => {
    for (let waited = 0; waited < 60_000; waited += 100) {
      const [row] = (await stack.db.raw(
        `SELECT COUNT(*) AS n FROM resources r LEFT JOIN content_chunk_lists l ON l.storage_key = r.storage_key
         WHERE r.user_id = ? AND r.storage_key IS NOT NULL AND r.size_bytes >= ? AND l.storage_key IS NULL`,
        [users[0].userId, 4 * MiB],
      )) as [Array<{ n: number }>];
      if (Number(row[0]!.n) === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  try {
    for (const size of sizes) {
      const src = path.join(work, `src-${size.bytes}`);
      await writeRandomFile(src, size.bytes);
      for (const method of METHODS) {
        const ms = gateways.map(() => 0);
        const count = gateways.map(() => 0);
        /** Per block, the lists side's rate over the other's: both sides of a block ran within seconds of each other. */
        const blockRatios: number[] = [];
        /** How long the lists side's lists took to be made after its block's last upload answered. */
        let listsAfterMs = 0;
        const clients = gateways.map((g) => new HttpClient(g.url));
        // A file of each side that PUT replaces.
        const targets = await Promise.all(clients.map((c, g) => upload(c, users[g]!.token, 'multipart', src, size.bytes, '')));
        await listsDone();
        for (let block = -1; block < size.blocks; block++) {
          // The sides take turns going first, and each block starts with no dirty pages: past about half
          // a gigabyte of them this disk holds every writer to its write-back rate, which would favour
          // whichever side happened to follow the longer pause.
          const blockMs = [0, 0];
          const large = size.bytes >= MiB;
          for (const g of block % 2 === 0 ? [1, 0] : [0, 1]) {
            if (large) execFileSync('sync');
            const t = process.hrtime.bigint();
            for (let i = 0; i < size.perBlock; i++) await upload(clients[g]!, users[g]!.token, method, src, size.bytes, targets[g]!);
            const uploaded = process.hrtime.bigint();
            // Before the other side's block: its uploads must not share the machine with this side's jobs.
            if (g === 0 && large) await listsDone();
            if (block < 0) continue;
            ms[g]! += Number(uploaded - t) / 1e6;
            blockMs[g] = Number(uploaded - t) / 1e6;
            if (g === 0) listsAfterMs += Number(process.hrtime.bigint() - uploaded) / 1e6;
            count[g]! += size.perBlock;
          }
          if (block >= 0) blockRatios.push(blockMs[1]! / blockMs[0]!);
        }
        for (const c of clients) c.close();
        const rates = ms.map((m, g) => (count[g]! * size.bytes) / MB / (m / 1000));
        const perSecond = ms.map((m, g) => count[g]! / (m / 1000));
        const overall = rates[0]! / rates[1]!;
        const ratio = percentile([...blockRatios].sort((a, b) => a - b), 50);
        const bound = size.bytes >= MiB ? 0.9 : 0.95;
        const shown = size.bytes >= MiB ? rates.map((r) => `${fmt(r)} MB/s`) : perSecond.map((r) => `${fmt(r)} uploads/s`);
        const withLists = (count[0]! * size.bytes) / MB / ((ms[0]! + listsAfterMs) / 1000);
        rows.push([
          size.label,
          method,
          String(count[0]),
          shown[0]!,
          shown[1]!,
          `${fmt(ratio, 3)} (${ratio >= bound ? '>=' : '<'} ${bound}); overall ${fmt(overall, 3)}`,
          size.bytes >= MiB ? `${fmt(listsAfterMs / count[0]!)} ms; ${fmt(withLists / rates[1]!, 3)}` : '',
        ]);
        figures.push(figure('chunk-lists', `${size.label} ${method} upload with lists ahead`, 'throughput', 'MB/s', 'rate', rates[0]!, [{ name: 'the same without lists ahead', value: rates[1]! }]));
        details[`${size.label} ${method}`] = { ms, count, rates, blockRatios, listsAfterMs };
        const spread = size.perBlock > 1 ? `median ${fmt(ratio, 3)}, blocks ${blockRatios.map((r) => fmt(r, 2)).join(' ')}` : `median of ${blockRatios.length} pairs ${fmt(ratio, 3)}, totals ${fmt(overall, 3)}`;
        log(`chunk-lists: ${size.label} ${method}: ${shown.join(' vs ')} (${spread})`);
      }
      await fs.rm(src, { force: true });
    }
  } finally {
    await Promise.all(gateways.map((g) => g.proc.stop()));
    await fs.rm(work, { recursive: true, force: true });
  }
  return {
    name: 'chunk-lists',
    title: 'Whole uploads with chunk lists made ahead by the workers, against the same without (A/B, one run)',
    headers: ['size', 'method', 'uploads a side', 'lists ahead', 'no lists ahead', 'ratio: median of the blocks (bound); of the totals', 'list ready after the upload, per upload; ratio counting it'],
    rows,
    notes: [
      'Two gateways of the same service on the same database, store, Redis and worker; CHUNK_LISTS_AHEAD=true on one, false on the other. Blocks of uploads alternate between them after a warm-up block each, the side going first swapped each block and the dirty pages flushed (sync) before each; the rates are the uploads\' own (each request until its answer); the worker\'s list jobs wait until no large body has streamed for a moment (shared/chunks/uploads.quiet.ts), so within a block they run only in the pauses between uploads. The ratio is the median of the blocks\' ratios, each of two sides run back to back (this host\'s speed drifts by more than the goal\'s margin over a minute, and a flush stalled for a second would sway a ratio of totals), beside the ratio of the totals; 1 KiB uploads take turns one by one, a block being one upload a side.',
      'After a block of the lists side, the next block waits until the workers have made its lists; that wait is the last column, and the ratio beside it counts it as upload time (the cost when uploads follow each other on these two cores).',
      'Lists are asked for from 4 MiB on: a 1 KiB upload asks for none, and its ratio shows only the hook after its commit.',
    ],
    figures,
    details,
  };
}
