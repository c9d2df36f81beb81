import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import IORedis from 'ioredis';

const run = promisify(execFile);
/** scripts/ at the root, seen from test/support (jest) or dist/test/support (bench, chaos). */
function script(): string {
  const root = __dirname.includes(`${path.sep}dist${path.sep}`) ? '../../..' : '../..';
  return path.resolve(__dirname, root, 'scripts/redis-cluster.sh');
}

/** A local Redis Cluster started by scripts/redis-cluster.sh, for tests, benchmarks and the chaos run. */
export class RedisCluster {
  private constructor(
    private readonly dir: string,
    /** The REDIS_CLUSTER_NODES value. */
    readonly nodes: string,
    readonly ports: number[],
  ) {}

  static async start(masters = 3, replicasPerMaster = 0): Promise<RedisCluster> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'redis-cluster-'));
    const { stdout } = await run('bash', [script(), 'start', dir, String(masters), String(replicasPerMaster)], { timeout: 60_000 });
    const ports = (await fs.readFile(path.join(dir, 'ports'), 'utf8')).trim().split('\n').map(Number);
    return new RedisCluster(dir, stdout.trim(), ports);
  }

  /** The port of the master that holds `key`'s slot now (for `{tag}` keys: the tag's). */
  async masterOf(key: string): Promise<number> {
    const probe = new IORedis({ port: this.ports[0], host: '127.0.0.1', maxRetriesPerRequest: 1 });
    try {
      const slot = (await probe.call('CLUSTER', 'KEYSLOT', key)) as number;
      const shards = (await probe.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>;
      const shard = shards.find(([from, to]) => slot >= from && slot <= to);
      if (!shard) throw new Error(`no master serves slot ${slot}`);
      return shard[2][1];
    } finally {
      probe.disconnect();
    }
  }

  /** The pid of the node on `port`. */
  async pidOf(port: number): Promise<number> {
    return Number((await fs.readFile(path.join(this.dir, `redis-${port}.pid`), 'utf8')).trim());
  }

  /** Kills the node on `port` (SIGKILL: no goodbye to its peers), as a crashed machine would. */
  async kill(port: number): Promise<void> {
    const pid = await this.pidOf(port);
    process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 200; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Resolves once a node other than `deadPort` serves `key`'s slot as master and the cluster says ok. */
  async failedOver(key: string, deadPort: number, timeoutMs = 20_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    const alive = this.ports.filter((p) => p !== deadPort);
    for (;;) {
      const probe = new IORedis({ port: alive[0], host: '127.0.0.1', maxRetriesPerRequest: 1 });
      try {
        const info = (await probe.call('CLUSTER', 'INFO')) as string;
        const slot = (await probe.call('CLUSTER', 'KEYSLOT', key)) as number;
        const shards = (await probe.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>;
        const owner = shards.find(([from, to]) => slot >= from && slot <= to)?.[2][1];
        if (info.includes('cluster_state:ok') && owner !== undefined && owner !== deadPort) return owner;
      } catch {
        // asked during the election: ask again
      } finally {
        probe.disconnect();
      }
      if (Date.now() > deadline) throw new Error(`no failover of ${key} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Starts a killed node again; it rejoins the cluster (as a replica once its replica took over). */
  async restart(port: number): Promise<void> {
    await run('bash', [script(), 'restart', this.dir, String(port)], { timeout: 60_000 });
  }

  async stop(): Promise<void> {
    await run('bash', [script(), 'stop', this.dir], { timeout: 30_000 });
  }
}
