import { RedisCluster } from '../support/redis.cluster';
import type { BenchContext } from './context';
import { HttpClient, login, provisionUsers, type BenchUser } from './http.client';
import { OpsGenerator } from './ops.generator';
import { ADMIN, BenchStack } from './stack';
import { figure, fmt, type ScenarioReport } from './stats';

/** A second service (gateway and worker processes) beside the bench's own, on other Redis or storage. */
export async function withStack<T>(ctx: BenchContext, env: Record<string, string>, run: (stack: BenchStack, client: HttpClient, admin: BenchUser) => Promise<T>): Promise<T> {
  const stack = new BenchStack({ log: ctx.log, env });
  try {
    await stack.start();
    const client = new HttpClient(stack.baseUrl);
    try {
      return await run(stack, client, await login(client, ADMIN.username, ADMIN.password));
    } finally {
      client.close();
    }
  } finally {
    await stack.stop();
  }
}

/** Ops per second of `devices` devices each sending batches of `size` ops one after the other, for `ms`. */
async function syncThroughput(client: HttpClient, users: BenchUser[], tag: string, size: number, ms: number): Promise<number> {
  const outboxes = users.map((_, i) => new OpsGenerator(`${tag}${i}`, 7000 + i));
  let ops = 0;
  let failures = 0;
  const started = Date.now();
  await Promise.all(
    users.map(async (user, i) => {
      while (Date.now() - started < ms) {
        const res = await client.request('POST', '/v1/sync/ops', {
          headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
          body: `{"ops":${outboxes[i]!.batch(size)}}`,
        });
        if (res.status === 200) ops += size;
        else failures++;
      }
    }),
  );
  if (failures > 0) throw new Error(`${failures} sync requests failed`);
  return ops / ((Date.now() - started) / 1000);
}

/**
 * Sync throughput (16 devices, batches of 100 ops) with every use of Redis on a three-master Redis
 * Cluster against the bench's one Redis node, in turns, in the same run. Goal: at least 0.9.
 */
export async function runRedisCluster(ctx: BenchContext): Promise<ScenarioReport> {
  const devices = 16;
  const size = 100;
  const ms = ctx.profile.name === 'quick' ? 2000 : 5000;
  const single = await provisionUsers(ctx.client, ctx.adminToken, Array.from({ length: devices }, (_, i) => `rc-one-${i}`));
  const cluster = await RedisCluster.start(3, 0);
  try {
    return await withStack(ctx, { REDIS_CLUSTER_NODES: cluster.nodes }, async (_stack, client, admin) => {
      const users = await provisionUsers(client, admin.token, Array.from({ length: devices }, (_, i) => `rc-${i}`));
      // Warm-up on each, then two rounds in turns; the better round of each counts.
      await syncThroughput(ctx.client, single, 'w1', size, 1000);
      await syncThroughput(client, users, 'w2', size, 1000);
      const one: number[] = [];
      const many: number[] = [];
      for (let round = 0; round < 2; round++) {
        one.push(await syncThroughput(ctx.client, single, `o${round}`, size, ms));
        many.push(await syncThroughput(client, users, `c${round}`, size, ms));
      }
      const best = { one: Math.max(...one), cluster: Math.max(...many) };
      const ratio = best.cluster / best.one;
      ctx.log(`redis-cluster: ${fmt(best.cluster)} ops/s on the cluster, ${fmt(best.one)} on one node (${fmt(ratio, 2)})`);
      return {
        name: 'redis-cluster',
        title: `Sync on a Redis Cluster (3 masters) against one Redis node: ${devices} devices x ${size} ops`,
        headers: ['Redis', 'ops/s (rounds)', 'best', 'ratio to one node', 'goal'],
        rows: [
          ['one node', one.map((v) => fmt(v)).join(', '), fmt(best.one), '1.00', ''],
          ['cluster, 3 masters', many.map((v) => fmt(v)).join(', '), fmt(best.cluster), fmt(ratio, 2), '>= 0.90'],
        ],
        notes: [`${ms / 1000} s per round; the two services run side by side on one machine and MariaDB, in turns.`],
        figures: [figure('redis-cluster', `${devices}x${size}`, 'sync throughput', 'ops/s', 'rate', best.cluster, [{ name: 'one Redis node', value: best.one }])],
        details: { one, cluster: many },
      };
    });
  } finally {
    await cluster.stop();
  }
}
