import { gzipSync } from 'node:zlib';
import { ResourceRepository } from '../../shared/db/repositories/resource.repository';
import { SNAPSHOT_LIMIT, snapshotBody } from '../../services/gateway/sync/permissions.service';
import type { BenchContext } from './context';
import { readDataset } from './dataset';
import { figure, fmt, fmtBytes, fmtRatio, msSince, now, summarize, type ScenarioReport } from './stats';


/**
 * GET /v1/sync/permissions for a device that has been away while `changed` resources changed: the
 * user of the largest read dataset, `after` set just below the `changed`-th newest update.
 */
export async function runSnapshot(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const { changed, reps } = profile.snapshot;
  const size = [...profile.reads.sizes].sort((a, b) => b - a).find((s) => s + Math.ceil(s / 100) > changed) ?? Math.max(...profile.reads.sizes);
  const data = await readDataset(ctx, size);
  const userId = data.user.userId;

  const [boundary] = (await stack.db.raw(
    'SELECT updated_at FROM resources WHERE user_id = ? AND alive = 1 ORDER BY updated_at DESC, id LIMIT 1 OFFSET ?',
    [userId, changed],
  )) as [Array<{ updated_at: Date }>];
  const after = boundary[0] ? boundary[0].updated_at.getTime() : 0;
  const path = `/v1/sync/permissions?after=${after}`;

  const first = await client.request('GET', path, { headers: { authorization: `Bearer ${data.user.token}` } });
  if (first.status !== 200) throw new Error(`snapshot failed: ${first.status} ${first.body.toString('utf8').slice(0, 200)}`);
  const body = JSON.parse(first.body.toString('utf8')) as { items: unknown[]; truncated: boolean };
  const bytes = first.body.length;
  const gz = now();
  const gzipBytes = gzipSync(first.body).length;
  const gzipMs = msSince(gz);

  const latencies: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = now();
    const res = await client.request('GET', path, { headers: { authorization: `Bearer ${data.user.token}` }, discardBody: true });
    latencies.push(msSince(t));
    if (res.status !== 200) throw new Error(`snapshot failed: ${res.status}`);
  }
  const svc = summarize(latencies);

  // Ceiling: the route's own repository call and the same mapping and JSON encoding, in this process.
  const repo = new ResourceRepository(stack.db);
  const queryOnly: number[] = [];
  const withJson: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = now();
    const rows = await repo.changedSince(userId, after, SNAPSHOT_LIMIT + 1);
    queryOnly.push(msSince(t));
    JSON.stringify(snapshotBody(rows, Date.now()));
    withJson.push(msSince(t));
  }
  const ceil = summarize(withJson);
  const query = summarize(queryOnly);
  log(`snapshot: ${body.items.length} items, ${fmtBytes(bytes)}, p50 ${fmt(svc.p50)} ms (repository + JSON ${fmt(ceil.p50)} ms)`);

  const kase = `${body.items.length} changed of ${data.active} (user with ${size} files)`;
  return {
    name: 'snapshot',
    title: `Snapshot: GET /v1/sync/permissions, ${reps} sequential requests`,
    headers: ['case', 'service p50 / p99 ms', 'repository + JSON p50 / p99 ms', 'ratio p50', 'query alone p50 ms', 'response size', 'gzip -6 size'],
    rows: [
      [
        kase,
        `${fmt(svc.p50)} / ${fmt(svc.p99)}`,
        `${fmt(ceil.p50)} / ${fmt(ceil.p99)}`,
        fmtRatio(svc.p50, ceil.p50, 'time'),
        fmt(query.p50),
        fmtBytes(bytes),
        `${fmtBytes(gzipBytes)} (${fmtRatio(gzipBytes, bytes, 'rate')})`,
      ],
    ],
    notes: [
      'Ceiling: the route\'s own ResourceRepository.changedSince plus the same mapping and JSON.stringify, in the bench process: the database and encoding work without HTTP, auth and the response write.',
      `With ${reps} samples, p99 is the slowest one or two. The size column compares the body with what gzip would send; the gateway does not compress (gzip -6 of this body took ${fmt(gzipMs)} ms in the bench process).`,
    ],
    figures: [
      figure('snapshot', kase, 'latency p50', 'ms', 'time', svc.p50, [{ name: 'repository + JSON in process', value: ceil.p50 }]),
      figure('snapshot', kase, 'latency p99', 'ms', 'time', svc.p99, [{ name: 'repository + JSON in process', value: ceil.p99 }]),
      figure('snapshot', kase, 'response size', 'bytes', 'size', bytes, [{ name: 'same body gzip -6', value: gzipBytes }]),
    ],
    details: { after, items: body.items.length, truncated: body.truncated, bytes, gzipBytes, gzipMs, service: svc, repositoryAndJson: ceil, queryOnly: query },
  };
}
