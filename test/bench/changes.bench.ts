import http from 'node:http';
import { ChangeRepository, FEED_START, type FeedPosition } from '../../shared/db/repositories/change.repository';
import { NO_DEVICE, OwnerTransactions } from '../../shared/db/owner.transaction';
import { ResourceRepository } from '../../shared/db/repositories/resource.repository';
import { newId } from '../../shared/ids';
import { createLogger } from '../../shared/logger';
import { RedisChangeNotifier } from '../../shared/queue/change.channel';
import { toChangeView } from '../../services/gateway/changes/changes.routes';
import type { BenchContext } from './context';
import { provisionUsers, type BenchUser } from './http.client';
import { memoryOf, REDIS_URL } from './stack';
import { figure, fmt, fmtBytes, fmtRatio, msSince, now, summarize, type ScenarioReport } from './stats';

const PAGE = 1000;

/** Gives a user `count` resources, each at its own feed position, in bulk (as a long offline spell would). */
async function seedChanges(ctx: BenchContext, userId: string, count: number): Promise<void> {
  const at = new Date();
  for (let start = 0; start < count; start += 2000) {
    const rows = Array.from({ length: Math.min(2000, count - start) }, (_, i) => ({
      id: newId(),
      user_id: userId,
      parent_id: null,
      type: 'file',
      name: `feed-${start + i}.txt`,
      size_bytes: 1000 + i,
      mime_type: 'text/plain',
      created_at: at,
      updated_at: at,
      change_seq: start + i + 1,
    }));
    await ctx.stack.db('resources').insert(rows);
  }
  await ctx.stack.db('users').where({ id: userId }).update({ change_seq: count });
}

async function drainOverHttp(ctx: BenchContext, token: string): Promise<number> {
  let cursor: string | undefined;
  let items = 0;
  for (;;) {
    const path = `/v1/sync/changes?limit=${PAGE}${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await ctx.client.json<{ items: unknown[]; cursor: string; hasMore: boolean }>('GET', path, undefined, token);
    if (res.status !== 200) throw new Error(`feed failed: ${res.status} ${res.text.slice(0, 200)}`);
    items += res.body.items.length;
    cursor = res.body.cursor;
    if (!res.body.hasMore) return items;
  }
}

/** The same pages read by the repository and encoded as the route does, in the bench process. */
async function drainDirect(repo: ChangeRepository, userId: string): Promise<number> {
  let from: FeedPosition = FEED_START;
  let items = 0;
  for (;;) {
    const rows = await repo.changesAfter(userId, from, 0, PAGE + 1);
    const page = rows.slice(0, PAGE);
    JSON.stringify({ items: page.map(toChangeView) });
    items += page.length;
    const last = page[page.length - 1];
    if (!last || rows.length <= PAGE) return items;
    from = { seq: last.changeSeq, id: last.id };
  }
}

interface Held {
  user: BenchUser;
  cursor: string;
  answered: Promise<number>;
}

/** Sends one long-poll request on a socket of its own; resolves with the hrtime (ms) its answer arrived. */
function hold(ctx: BenchContext, agent: http.Agent, user: BenchUser, cursor: string): Held {
  const answered = new Promise<number>((resolve, reject) => {
    const req = http.request(
      { host: ctx.client.url.hostname, port: ctx.client.url.port, path: `/v1/sync/changes?cursor=${cursor}&wait=60`, headers: { authorization: `Bearer ${user.token}` }, agent },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(Number(process.hrtime.bigint()) / 1e6) : reject(new Error(`held request answered ${res.statusCode}`))));
      },
    );
    req.on('error', reject);
    req.end();
  });
  answered.catch(() => undefined);
  return { user, cursor, answered };
}

export async function runChanges(ctx: BenchContext): Promise<ScenarioReport> {
  const { stack, client, profile, log } = ctx;
  const { changes: count, held: heldCount, users: userCount, rounds } = profile.changes;
  const users = await provisionUsers(client, ctx.adminToken, Array.from({ length: userCount }, (_, i) => `feed-${i}`));

  // 1. Reading a long feed, page by page.
  const reader = users[0]!;
  await seedChanges(ctx, reader.userId, count);
  const repo = new ChangeRepository(stack.db);
  const viaHttp: number[] = [];
  const direct: number[] = [];
  for (let i = 0; i < 5; i++) {
    let t = now();
    if ((await drainOverHttp(ctx, reader.token)) !== count) throw new Error('the feed did not return every change');
    viaHttp.push(msSince(t));
    t = now();
    await drainDirect(repo, reader.userId);
    direct.push(msSince(t));
  }
  const svc = summarize(viaHttp);
  const ceil = summarize(direct);
  log(`changes: ${count} changes in pages of ${PAGE}: ${fmt(svc.p50)} ms over HTTP, ${fmt(ceil.p50)} ms from the repository`);

  // 2. Long poll: `heldCount` requests held at once, spread over the users; one change wakes one user's.
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const cursors = new Map<string, string>();
  for (const user of users) cursors.set(user.userId, (await client.json('GET', '/v1/sync/changes?limit=1000000', undefined, user.token)).body.cursor);
  const gatewayPid = stack.gatewayPid;
  const idle = await memoryOf(gatewayPid);
  let held: Held[] = Array.from({ length: heldCount }, (_, i) => users[i % users.length]!).map((u) => hold(ctx, agent, u, cursors.get(u.userId)!));
  await new Promise((r) => setTimeout(r, 1500));
  const holding = await memoryOf(gatewayPid);

  const owners = new OwnerTransactions(stack.db, new RedisChangeNotifier(REDIS_URL, stack.queuePrefix, createLogger('bench', 'silent')));
  const wake: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const user = users[round % users.length]!;
    const mine = held.filter((h) => h.user === user);
    await owners.run({ userId: user.userId, deviceId: NO_DEVICE }, async (trx, clock) => {
      await new ResourceRepository(trx).insert({
        id: newId(), userId: user.userId, parentId: null, type: 'folder', name: `wake-${round}`, sizeBytes: 0, mimeType: null,
        extension: null, storageKey: null, contentSha256: null, createdAt: new Date(), change: clock.next(),
      });
    });
    const committedAt = Number(process.hrtime.bigint()) / 1e6;
    for (const answeredAt of await Promise.all(mine.map((h) => h.answered))) wake.push(answeredAt - committedAt);
    // Held again from the new position, so the next rounds keep `heldCount` requests waiting.
    const cursor = (await client.json('GET', `/v1/sync/changes?cursor=${mine[0]!.cursor}&limit=1000`, undefined, user.token)).body.cursor as string;
    held = held.filter((h) => h.user !== user).concat(mine.map(() => hold(ctx, agent, user, cursor)));
    await new Promise((r) => setTimeout(r, 300));
  }
  agent.destroy();
  const w = summarize(wake);
  log(`changes: wake-up p50 ${fmt(w.p50)} ms, p99 ${fmt(w.p99)} ms with ${heldCount} held; gateway RSS ${fmtBytes(idle.rss)} -> ${fmtBytes(holding.rss)}`);

  const feedCase = `${count} changes, pages of ${PAGE}`;
  const pollCase = `${heldCount} held requests over ${userCount} users`;
  return {
    name: 'changes',
    title: 'Change feed: GET /v1/sync/changes, paging and long poll',
    headers: ['case', 'service p50 / p99', 'ceiling p50 / p99', 'ratio p50'],
    rows: [
      [feedCase, `${fmt(svc.p50)} / ${fmt(svc.p99)} ms`, `${fmt(ceil.p50)} / ${fmt(ceil.p99)} ms`, fmtRatio(svc.p50, ceil.p50, 'time')],
      [`${pollCase}: commit to answer`, `${fmt(w.p50)} / ${fmt(w.p99)} ms`, 'n/a', 'n/a'],
      [`${pollCase}: gateway RSS`, `${fmtBytes(holding.rss)} (idle ${fmtBytes(idle.rss)})`, 'n/a', 'n/a'],
    ],
    notes: [
      'Feed ceiling: ChangeRepository.changesAfter for the same pages, mapped and encoded as the route does, in the bench process (no HTTP, no auth, no cursor signing).',
      `Long poll: each round commits one change of one user in the bench process (OwnerTransactions with the Redis notifier, as a worker does) and times every held request of that user from the commit to its answer (${heldCount / userCount} at once, each re-reading the feed); ${rounds} rounds, ${wake.length} samples. The requests of the other users stay held throughout.`,
    ],
    figures: [
      figure('changes', feedCase, 'full read p50', 'ms', 'time', svc.p50, [{ name: 'repository + JSON in process', value: ceil.p50 }]),
      figure('changes', pollCase, 'wake-up p50', 'ms', 'time', w.p50),
      figure('changes', pollCase, 'wake-up p99', 'ms', 'time', w.p99),
      figure('changes', pollCase, 'gateway RSS held', 'bytes', 'size', holding.rss, [{ name: 'gateway RSS idle', value: idle.rss }]),
    ],
    details: { service: svc, ceiling: ceil, wake: w, rssIdle: idle, rssHeld: holding },
  };
}
