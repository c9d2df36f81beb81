import { bullPrefix, connectRedis, parseClusterNodes } from '../../shared/redis/redis.connection';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { createDb, type Db } from '../../shared/db/knex';
import { SYNC_QUEUE_NAME } from '../../shared/queue/ring.contract';
import { IsolatedRun } from '../support/isolated.run';
import { ServiceProcess, type ServiceKind } from '../support/processes';

export const REDIS_URL = 'redis://127.0.0.1:6379';
export const ADMIN = { username: 'bench-admin', password: 'bench-admin-password-1' };
/** Settings the bench gives the service; everything else keeps its production default. */
export const SYNC_CONCURRENCY = 8;
export const LOGIN_CONCURRENCY = 2;
/**
 * Raised from the 30 s default: with 64 devices each sending 1000 ops at once, the last batches wait
 * behind the others for a worker slot; the bench measures that wait instead of turning it into 503s.
 */
export const SYNC_TIMEOUT_MS = 120_000;
export const DEFAULT_SYNC_TIMEOUT_MS = 30_000;

export interface StackOptions {
  /** Directory for --cpu-prof output; the processes are profiled when set. */
  cpuProfDir?: string;
  /** Extra environment for both processes. */
  env?: Record<string, string>;
  log: (line: string) => void;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** The gateway answers its readiness probe. */
export async function gatewayReady(baseUrl: string): Promise<boolean> {
  const res = await fetch(`${baseUrl}/readyz`).catch(() => undefined);
  return res?.status === 200;
}

/**
 * The service as it runs in production: the built gateway and worker as separate node processes, on a
 * database, upload directory and queue prefix of their own, on the local MariaDB and Redis. `stop()`
 * removes all of it and is safe to call more than once, from a signal handler included.
 */
export class BenchStack {
  private readonly run = new IsolatedRun('filesync_bench', { uploadsInSubfolder: true });
  readonly name = this.run.name;
  readonly databaseUrl = this.run.databaseUrl;
  readonly jwtSecret = randomBytes(32).toString('hex');
  port = 0;
  baseUrl = '';
  /** The bench's own pool on the service's database: data loading and the direct (no-HTTP) ceilings. */
  db!: Db;
  gateway?: ServiceProcess;
  worker?: ServiceProcess;
  /** Worker processes started beyond the first (the scaling runs). */
  readonly extraWorkers: ServiceProcess[] = [];
  /** Every process launched, for the teardown. */
  private readonly launched: ServiceProcess[] = [];
  private stopping?: Promise<void>;

  constructor(private readonly options: StackOptions) {}

  get queuePrefix(): string {
    return this.name;
  }

  /** The run's directory (DATA_DIR), once started. */
  get dir(): string {
    return this.run.dir;
  }

  get uploadDir(): string {
    return this.run.uploadDir;
  }

  env(): Record<string, string> {
    return this.run.env({ admin: ADMIN, jwtSecret: this.jwtSecret, redis: { REDIS_URL } }, {
      PORT: String(this.port),
      WORKER_PORT: '0',
      LOG_LEVEL: 'warn',
      SYNC_CONCURRENCY: String(SYNC_CONCURRENCY),
      LOGIN_CONCURRENCY: String(LOGIN_CONCURRENCY),
      SYNC_TIMEOUT_MS: String(SYNC_TIMEOUT_MS),
      // The long-poll bench holds hundreds of requests of one user.
      FEED_MAX_HELD_PER_USER: '1000',
      ...(this.options.env ?? {}),
    });
  }

  async start(): Promise<void> {
    await this.run.open();
    this.port = await freePort();
    this.baseUrl = `http://127.0.0.1:${this.port}`;

    // The gateway migrates the fresh database; the worker starts once it has, so they do not contend.
    this.gateway = await this.launch('gateway', 'gateway', {}, () => gatewayReady(this.baseUrl));
    this.worker = await this.launch('worker', 'worker', {}, () => this.workersReady(1));
    // Direct-apply ceilings queue 64 devices' batches on a worker-sized pool: they wait as long as
    // the service's requests may (SYNC_TIMEOUT_MS), not the 10 s default.
    this.db = createDb(this.databaseUrl, { max: SYNC_CONCURRENCY, acquireTimeoutMs: SYNC_TIMEOUT_MS, multipleStatements: true });
  }

  /**
   * Starts a service process on this stack's settings (with `env` over them), profiled when the bench
   * profiles; resolves once `ready` holds (a failed start leaves no process behind). `stop()` ends
   * whatever is still running, a process still starting included.
   */
  async launch(kind: ServiceKind, name: string, env: Record<string, string>, ready: () => Promise<boolean>): Promise<ServiceProcess> {
    // A folder per process: every thread of it (reading threads, chunk cutters) writes a profile of its own there.
    const nodeArgs = this.options.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${path.join(this.options.cpuProfDir, name)}`] : [];
    const proc = new ServiceProcess(kind, { name: `the ${name}`, env: { ...this.env(), ...env }, nodeArgs, keepOutput: 20_000 });
    this.launched.push(proc);
    return proc.start(ready, 60_000);
  }

  /** Starts one more worker process on the same database and queue; resolves once it takes rings. */
  async addWorker(): Promise<number> {
    const want = this.extraWorkers.length + 2;
    const proc = await this.launch('worker', `worker${want}`, {}, () => this.workersReady(want));
    this.extraWorkers.push(proc);
    return proc.child.pid!;
  }

  /** Stops the workers started by addWorker (SIGTERM; they finish their rings first). */
  async stopExtraWorkers(): Promise<void> {
    await Promise.all(this.extraWorkers.splice(0).map((proc) => proc.stop('SIGTERM')));
  }

  /** Pids of every worker process, the first one first. */
  get workerPids(): number[] {
    return [this.worker, ...this.extraWorkers].flatMap((c) => (c?.child.pid ? [c.child.pid] : []));
  }

  /** The worker logs at warn, so readiness is read from Redis: workers registered on the sync queue. */
  private workersReady(want = 1): Promise<boolean> {
    return this.withQueue(SYNC_QUEUE_NAME, async (queue) => (await queue.getWorkersCount()) >= want);
  }

  /** Whether the named queues hold no job waiting, delayed or running: the workers have caught up. */
  async queuesIdle(names: string[]): Promise<boolean> {
    for (const name of names) {
      const counts = await this.withQueue(name, (queue) => queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children'));
      if (Object.values(counts).some((n) => n > 0)) return false;
    }
    return true;
  }

  /** A look at one of the service's queues, on its Redis (the one node, or the cluster the bench gave it). */
  private async withQueue<T>(name: string, look: (queue: Queue) => Promise<T>): Promise<T> {
    const nodes = this.options.env?.REDIS_CLUSTER_NODES;
    const target = { redisUrl: REDIS_URL, redisClusterNodes: nodes ? parseClusterNodes(nodes) : undefined };
    const connection = connectRedis(target, 'producer', { enableOfflineQueue: true });
    const queue = new Queue(name, { connection, prefix: bullPrefix(target, this.queuePrefix) });
    try {
      return await look(queue);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  }

  get gatewayPid(): number {
    const pid = this.gateway?.child.pid;
    if (!pid) throw new Error('the gateway is not running');
    return pid;
  }

  /** Stops both processes (SIGTERM, then SIGKILL), drops the database, the Redis keys and the files. */
  stop(): Promise<void> {
    this.stopping ??= this.teardown();
    return this.stopping;
  }

  private async teardown(): Promise<void> {
    const problems: string[] = [];
    await Promise.all(
      this.launched.map(async (proc) => {
        if (await proc.stop('SIGTERM', 15_000)) problems.push(`${proc.name} did not stop on SIGTERM; killed`);
      }),
    );
    if (this.db) {
      await this.db.raw(`DROP DATABASE IF EXISTS \`${this.name}\``).catch((err: Error) => problems.push(`drop database: ${err.message}`));
      await this.db.destroy().catch(() => undefined);
    } else {
      // Start-up failed before the pool existed; the gateway may still have created the database.
      const db = createDb(this.databaseUrl.replace(/\/[^/]+$/, '/mysql'), { max: 1 });
      await db.raw(`DROP DATABASE IF EXISTS \`${this.name}\``).catch((err: Error) => problems.push(`drop database: ${err.message}`));
      await db.destroy().catch(() => undefined);
    }
    await deleteKeys(`${this.queuePrefix}`).catch((err: Error) => problems.push(`redis keys: ${err.message}`));
    if (this.dir) await fs.rm(this.dir, { recursive: true, force: true }).catch((err: Error) => problems.push(`files: ${err.message}`));
    for (const p of problems) this.options.log(`cleanup: ${p}`);
  }
}

/**
 * Removes every Redis key of this run: the service's queues (`<prefix>:...`) and the bench's own
 * ceiling queues (`<prefix>_ceil:...`). The prefix carries a random part, so nothing else matches.
 */
export async function deleteKeys(prefix: string): Promise<number> {
  const redis = new IORedis(REDIS_URL, { maxRetriesPerRequest: 1 });
  let removed = 0;
  try {
    for (const pattern of [`${prefix}:*`, `${prefix}_*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        if (keys.length > 0) removed += await redis.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    }
  } finally {
    redis.disconnect();
  }
  return removed;
}

/** Resident memory of a process from /proc: current (VmRSS) and peak since start or reset (VmHWM), in bytes. */
export async function memoryOf(pid: number): Promise<{ rss: number; hwm: number }> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  const read = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: read('VmRSS'), hwm: read('VmHWM') };
}

/** Resets a process's VmHWM to its current RSS (Linux: "5" into clear_refs). False when not permitted. */
export async function resetPeakMemory(pid: number): Promise<boolean> {
  try {
    await fs.writeFile(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
