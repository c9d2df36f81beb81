import { randomBytes } from 'node:crypto';
import type { BenchContext } from './context';
import { HttpClient, provisionUsers, type BenchUser } from './http.client';
import { figure, fmt, msSince, now, type Figure, type ScenarioReport } from './stats';

const BOUNDARY = 'peerbenchboundary';
const CONNECTIONS = 8;

/** Another file service taking multipart uploads (a Directus, for one): its base URL, bearer token and upload path. */
interface Peer {
  url: string;
  token: string;
  path: string;
}

/** The peer from BENCH_PEER_URL, BENCH_PEER_TOKEN and BENCH_PEER_PATH (default /files); the scenario needs the first two. */
function peerFromEnv(): Peer {
  const url = process.env.BENCH_PEER_URL;
  const token = process.env.BENCH_PEER_TOKEN;
  if (!url || !token) throw new Error('the peer scenario needs BENCH_PEER_URL and BENCH_PEER_TOKEN');
  return { url, token, path: process.env.BENCH_PEER_PATH ?? '/files' };
}

/** `size` random bytes as one file part named "file", 1 KiB uploads' body on both sides. */
function multipartOf(bytes: Buffer, name: string): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    bytes,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
}

/** Uploads at CONNECTIONS at once for `ms` through the same client code for both services; uploads per second. */
async function uploadRate(client: HttpClient, path: string, token: string, ms: number): Promise<number> {
  const payload = randomBytes(1024);
  const headers = { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
  const end = Date.now() + ms;
  let done = 0;
  const t = now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, c) => {
      for (let i = 0; Date.now() < end; i++) {
        const res = await client.request('POST', path, { headers, body: multipartOf(payload, `p-${c}-${i}-${randomBytes(4).toString('hex')}.bin`) });
        if (res.status !== 200 && res.status !== 201) throw new Error(`upload to ${client.url.host} failed: ${res.status} ${res.body.toString('utf8').slice(0, 200)}`);
        done++;
      }
    }),
  );
  return done / (msSince(t) / 1000);
}

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/**
 * 1 KiB multipart uploads at 8 connections, the service's POST /v1/files beside an external peer's
 * upload route, rounds alternating, one load generator. Only when named (`--only=peer`), with the
 * peer given in the environment; the peer runs outside the repository (docs/BENCHMARKS.md says how).
 */
export async function runPeer(ctx: BenchContext): Promise<ScenarioReport> {
  const peer = peerFromEnv();
  const quick = ctx.profile.name === 'quick';
  const [user] = (await provisionUsers(ctx.client, ctx.adminToken, ['peer-small'])) as BenchUser[] as [BenchUser];
  const peerClient = new HttpClient(peer.url);
  const roundMs = quick ? 2000 : 4000;
  const ours: number[] = [];
  const theirs: number[] = [];
  try {
    await uploadRate(ctx.client, '/v1/files', user.token, 500);
    await uploadRate(peerClient, peer.path, peer.token, 500);
    for (let round = 0; round < (quick ? 3 : 5); round++) {
      ours.push(await uploadRate(ctx.client, '/v1/files', user.token, roundMs));
      theirs.push(await uploadRate(peerClient, peer.path, peer.token, roundMs));
    }
  } finally {
    peerClient.close();
  }
  const ratios = ours.map((x, i) => x / theirs[i]!);
  ctx.log(`peer uploads: filesync ${ours.map((x) => fmt(x)).join(', ')} / peer ${theirs.map((x) => fmt(x)).join(', ')} per s`);
  const figures: Figure[] = [figure('peer', '1 KiB uploads, 8 connections', 'uploads/s', '/s', 'rate', median(ours), [{ name: 'peer', value: median(theirs) }])];
  const row = (label: string, a: number, b: number) => [label, `${fmt(a)}/s`, `${fmt(b)}/s`, `${fmt(a / b, 2)}x`];
  return {
    name: 'peer',
    title: `1 KiB uploads at ${CONNECTIONS} connections: POST /v1/files beside ${peer.url}${peer.path}`,
    headers: ['rounds', 'filesync', 'peer', 'filesync ÷ peer'],
    rows: [
      row('median', median(ours), median(theirs)),
      ...ours.map((x, i) => row(`round ${i + 1}`, x, theirs[i]!)),
      ['ratio per round (min to max)', '', '', `${fmt(Math.min(...ratios), 2)}x to ${fmt(Math.max(...ratios), 2)}x`],
    ],
    notes: ['Rounds alternate, the service first; one load generator and one keep-alive client per service.'],
    figures,
    details: { ours, theirs },
  };
}
