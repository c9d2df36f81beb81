import IORedis, { Cluster, type ClusterOptions, type Redis, type RedisOptions } from 'ioredis';

/** A connection to Redis: one node (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES). */
export type RedisConnection = Redis | Cluster;

export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

/**
 * Where Redis is: a URL, or the configuration's pair. With cluster nodes every connection goes to
 * the cluster and the URL is not used.
 */
export type RedisTarget = string | { readonly redisUrl: string; readonly redisClusterNodes?: readonly RedisNode[] | undefined };

export type RedisRole = 'producer' | 'blocking';

/** The options of a connection to one node, from its URL. */
export function redisOptions(url: string, role: 'producer' | 'blocking'): RedisOptions {
  const u = new URL(url);
  const db = u.pathname && u.pathname !== '/' ? Number(u.pathname.slice(1)) : 0;
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db: Number.isInteger(db) ? db : 0,
    tls: u.protocol === 'rediss:' ? {} : undefined,
    // Producers fail fast while Redis is down; blocking connections (workers, events) wait for it.
    maxRetriesPerRequest: role === 'producer' ? 1 : null,
    enableOfflineQueue: role !== 'producer',
    connectTimeout: 5000,
    retryStrategy: (times: number) => Math.min(times * 200, 2000),
  };
}

function clusterNodesOf(target: RedisTarget): readonly RedisNode[] | undefined {
  return typeof target === 'string' ? undefined : target.redisClusterNodes;
}

function urlOf(target: RedisTarget): string {
  return typeof target === 'string' ? target : target.redisUrl;
}

export function isCluster(target: RedisTarget): boolean {
  return (clusterNodesOf(target)?.length ?? 0) > 0;
}

/**
 * The prefix of BullMQ's keys. On a cluster every key of one queue must hash to one slot (BullMQ's
 * scripts touch several at once), so the prefix is a hash tag: `{filesync}:sync:...`. One node keeps
 * the plain prefix, so its keys stay where they always were.
 */
export function bullPrefix(target: RedisTarget, prefix: string): string {
  return isCluster(target) ? `{${prefix}}` : prefix;
}

/**
 * Opens a connection. `producer`: commands fail fast while Redis is away (a request answers 503
 * rather than hang); `blocking`: subscribers and BullMQ workers wait for Redis to come back. The
 * options in `overrides` apply to each node's connection.
 */
export function connectRedis(target: RedisTarget, role: RedisRole, overrides: Partial<RedisOptions> = {}): RedisConnection {
  const nodes = clusterNodesOf(target);
  if (!nodes || nodes.length === 0) return new IORedis({ ...redisOptions(urlOf(target), role), ...overrides });
  const { enableOfflineQueue, ...perNode } = overrides;
  const options: ClusterOptions = {
    // A producer may queue a command while the cluster's slots are being (re)discovered, never for
    // long: each command still gives up after its retries.
    enableOfflineQueue: enableOfflineQueue ?? true,
    enableReadyCheck: true,
    // During a failover a slot answers CLUSTERDOWN or TRYAGAIN, or its master is unreachable, until
    // a replica takes over (cluster-node-timeout plus an election): commands are retried meanwhile.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 200,
    maxRedirections: role === 'producer' ? 32 : 64,
    slotsRefreshTimeout: 2000,
    clusterRetryStrategy: (times: number) => Math.min(times * 200, 2000),
    redisOptions: {
      connectTimeout: 5000,
      maxRetriesPerRequest: role === 'producer' ? 1 : null,
      ...perNode,
    },
  };
  return new Cluster(
    nodes.map((n) => ({ host: n.host, port: n.port })),
    options,
  );
}

/** `host:port,host:port` (REDIS_CLUSTER_NODES) as nodes; throws on a malformed entry. */
export function parseClusterNodes(text: string): RedisNode[] {
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const match = /^(\[[0-9a-fA-F:]+\]|[^:\s]+):(\d{1,5})$/.exec(entry);
      const port = match ? Number(match[2]) : 0;
      if (!match || port < 1 || port > 65535) throw new Error(`REDIS_CLUSTER_NODES must be host:port,host:port,...; not "${entry}"`);
      return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
    });
}

/** Every master of a cluster (or the one node), for commands that must reach each, like SCRIPT LOAD. */
export function masters(connection: RedisConnection): Redis[] {
  return connection instanceof Cluster ? connection.nodes('master') : [connection];
}

/** Closes a connection: QUIT when it is up (pending replies arrive), else dropped at once. */
export async function closeRedis(connection: RedisConnection): Promise<void> {
  if (connection.status === 'end') return;
  if (connection.status === 'ready') await connection.quit().catch(() => undefined);
  connection.disconnect();
}

/**
 * BullMQ never closes a connection it was handed (it may be shared): this ties one made for a single
 * queue or worker to it, so closing the owner closes the connection too.
 */
export function closingWith<T extends { close(): Promise<void> }>(owner: T, connection: RedisConnection): T {
  const close = owner.close.bind(owner);
  owner.close = async () => {
    try {
      await close();
    } finally {
      connection.disconnect();
    }
  };
  return owner;
}
