/**
 * `npm run chaos [-- --minutes=3] [-- --workers=3] [-- --devices=12] [-- --delta-users=2] [-- --delta-mib=4] [-- --redis=cluster] [-- --storage=s3] [-- --keep]`
 *
 * A fault-injection run against real processes: one gateway and several workers built into dist/,
 * a database of its own on the local MySQL/MariaDB (DATABASE_HOST_URL, default root@127.0.0.1:3306)
 * and a redis-server of its own on a free port (with an append-only file). Devices send sequential
 * batches and resend each one until it is answered 200, recording every answer. Faults: workers and
 * the gateway SIGKILLed and restarted, Redis restarted with and without its data, a worker frozen
 * with SIGSTOP for 25 s. With `--redis=cluster` the services run on a six-node Redis Cluster (three
 * masters, three replicas; scripts/redis-cluster.sh) instead, and the Redis faults are the master
 * serving the queues' slot SIGKILLed, its replica taking over, the dead node restarted as a replica
 * (then the same for another master). With `--storage=s3` content lives on a one-node Ceph RGW
 * (scripts/rgw.sh) and a client uploads files over tus through every fault, resuming from HEAD's
 * offset whenever a request fails (the gateway's SIGKILL above all); each finished file is read back
 * and compared at the end. Beside them, the two devices of each delta user edit the same 1-4 MiB files
 * (`--delta-mib` sets the largest) and send every edit as a delta upload (delta.device.ts); at the
 * end each file must hold, byte for byte, the last write acknowledged, with one rev and one kept
 * version per write, the byte counters equal to the rows, and staging holding only what the
 * SIGKILLed gateways left, which the staging sweep removes. A client sends many small files per
 * request (bulk.uploader.ts) with ids of its own, again after a failed request: every file answered
 * 201 must be there, and no file the client did not send. At the end MySQL is checked against every answer; the exit code is non-zero
 * when anything was lost, doubled, applied out of order or left hanging.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { createDb } from '../../shared/db/knex';
import { Api } from '../support/client';
import { createS3Client } from '../../shared/storage/s3/s3.client';
import { RedisCluster } from '../support/redis.cluster';
import { createBucket, Rgw } from '../support/rgw';
import { IsolatedRun } from '../support/isolated.run';
import { ChaosUploader, type UploaderReport } from './uploader';
import { ChaosBulkUploader } from './bulk.uploader';
import { freePort, RedisServer } from '../support/redis.server';
import { verify, type DeviceInfo } from './check';
import { ChaosDevice, type Attempt } from './device';
import { checkStaging, deltaCounters, deltaUsers, verifyDeltas } from './delta.check';
import { loadConfig } from '../../shared/config';
import { createContentStore } from '../../shared/storage/store.factory';
import { ServiceProcess, type ServiceKind } from '../support/processes';
import { latencyReport, type FaultEvent } from './report';

const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? 'true'];
  }),
);
const MINUTES = Number(args.minutes ?? 3);
const WORKERS = Number(args.workers ?? 3);
const DEVICES = Number(args.devices ?? 12);
const DELTA_USERS = Number(args['delta-users'] ?? 2);
/** The largest a delta file grows; files start between a quarter and three quarters of it. */
const DELTA_MAX_BYTES = Number(args['delta-mib'] ?? 4) * 1024 * 1024;
/** Few kept versions, so the run's many rewrites of large files take little disk. */
const MAX_VERSIONS = 3;
const ON_CLUSTER = args.redis === 'cluster';
const ON_S3 = args.storage === 's3';
const SYNC_TIMEOUT_MS = 10_000;
const HANG_MS = SYNC_TIMEOUT_MS + 5_000;
const ADMIN = { username: 'chaos-admin', password: 'chaos-admin-password' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stamp = () => new Date().toISOString().slice(11, 19);
const log = (msg: string) => console.log(`[chaos ${stamp()}] ${msg}`);

async function main(): Promise<void> {
  const run = await new IsolatedRun('fs_chaos', { databaseServer: process.env.DATABASE_HOST_URL, uploadsInSubfolder: true }).open();
  const { name, dir, databaseUrl } = run;
  const redis = ON_CLUSTER ? await RedisCluster.start(3, 1) : await RedisServer.start();
  const rgw = ON_S3 ? await Rgw.start() : undefined;
  const storage: Record<string, string> = {};
  if (rgw) {
    Object.assign(storage, rgw.env, { STORAGE_DRIVER: 's3', S3_BUCKET: 'filesync-chaos', S3_PREFIX: `${name}/` });
    const client = createS3Client({
      bucket: 'filesync-chaos',
      prefix: '',
      endpoint: rgw.env.S3_ENDPOINT,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: rgw.env.S3_ACCESS_KEY_ID!, secretAccessKey: rgw.env.S3_SECRET_ACCESS_KEY! },
    });
    await createBucket(client, 'filesync-chaos');
    client.destroy();
  }
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const where = redis instanceof RedisCluster ? `a Redis Cluster on ${redis.nodes}` : `redis on ${redis.port}`;
  log(`database ${name}, ${where}, gateway on ${port}, ${WORKERS} workers, ${DEVICES} devices, ${MINUTES} min; logs in ${dir}`);
  const redisSetting: Record<string, string> = redis instanceof RedisCluster ? { REDIS_CLUSTER_NODES: redis.nodes } : { REDIS_URL: redis.url };
  const env = run.env({ admin: ADMIN, jwtSecret: randomBytes(32).toString('hex'), redis: redisSetting }, {
    LOG_LEVEL: 'info',
    SYNC_TIMEOUT_MS: String(SYNC_TIMEOUT_MS),
    SYNC_LOCK_MS: '3000',
    SYNC_BATCH_DEADLINE_MS: '5000',
    SYNC_LOCK_WAIT_S: '3',
    SHUTDOWN_TIMEOUT_MS: '3000',
    MAX_VERSIONS: String(MAX_VERSIONS),
    PORT: String(port),
    WORKER_PORT: '0',
    ...storage,
  });
  // Each process's output goes to a log file of its own in the run's directory, across restarts.
  const launch = (kind: ServiceKind, name: string) => new ServiceProcess(kind, { name, env, logFile: path.join(dir, `${name}.log`), keepOutput: 100_000 });
  const gateway = launch('gateway', 'gateway');
  const workers = Array.from({ length: WORKERS }, (_, i) => launch('worker', `worker-${i}`));
  const db = createDb(databaseUrl, { max: 4 });
  let exitCode = 1;
  try {
    await gateway.start('gateway listening');
    await Promise.all(workers.map((w) => w.start('worker ready')));
    const admin = (await new Api(baseUrl).login(ADMIN.username, ADMIN.password)).api;
    const attempts: Attempt[] = [];
    const infos: DeviceInfo[] = [];
    const devices: ChaosDevice[] = [];
    for (let i = 0; i < DEVICES; i++) {
      const u = await admin.createUser(`chaos-${i}`);
      const device = new ChaosDevice({ index: i, baseUrl: () => baseUrl, token: u.token, hangMs: HANG_MS, record: (a) => attempts.push(a) });
      devices.push(device);
      infos.push({ index: i, userId: u.userId, deviceId: u.deviceId, model: device.model });
    }

    const deltaStats = deltaCounters();
    const deltas = await deltaUsers(admin, baseUrl, DELTA_USERS, deltaStats, HANG_MS, DELTA_MAX_BYTES);

    const started = Date.now();
    const endAt = started + MINUTES * 60_000;
    let stopping = false;
    let drainUntil = Number.POSITIVE_INFINITY;
    const loops = devices.map((d) => d.run(() => stopping, () => drainUntil));
    const uploader = ON_S3 ? new ChaosUploader(() => baseUrl, (await admin.createUser('chaos-uploader')).token) : undefined;
    const uploading = uploader?.run(() => stopping);
    const bulk = new ChaosBulkUploader(() => baseUrl, (await admin.createUser('chaos-bulk')).token);
    const bulkSending = bulk.run(() => stopping);
    const editing = deltas.flatMap((u) => u.devices.map((d) => d.run(() => stopping, () => drainUntil)));
    const faults = await runFaults({ gateway, workers, redis, queueSlotKey: `{${name}}`, endAt, devices });

    stopping = true;
    drainUntil = Date.now() + 60_000;
    log('faults over; letting every device finish the batch in hand');
    await Promise.all([...loops, uploading, bulkSending, ...editing]);
    await sleep(3000);
    const verdict = await verify(db, infos, attempts);
    const uploads: UploaderReport | undefined = await uploader?.verify();
    const bulked = await bulk.verify();
    const deltaVerdict = await verifyDeltas(db, deltas, MAX_VERSIONS);
    const lastKill = Math.max(0, ...faults.filter((f) => f.name.startsWith('SIGKILL the gateway')).map((f) => f.at));
    const staging = await checkStaging(createContentStore(loadConfig(env)), lastKill);
    const report = latencyReport(attempts, faults, started);
    const answered = attempts.filter((a) => a.status === 200).length;
    const ops = attempts.filter((a) => a.status === 200).reduce((n, a) => n + Object.keys(a.outcomes ?? {}).length, 0);
    await fs.writeFile(path.join(dir, 'attempts.jsonl'), attempts.map((a) => JSON.stringify(a)).join('\n'));

    console.log('');
    console.log(`requests: ${attempts.length} attempts, ${answered} answered 200 (${ops} ops acknowledged), ${attempts.filter((a) => a.status === 503).length} answered 503, ${attempts.filter((a) => a.status === 0).length} connection errors`);
    console.log(`lost: ${verdict.lost} (ops without trace ${verdict.lostOps}, resources unlike the clients' model ${verdict.stateMismatches})`);
    console.log(`doubled: ${verdict.doubled}`);
    console.log(`order violations: ${verdict.orderViolations}`);
    console.log(`hung: ${verdict.hung} (no answer within ${HANG_MS / 1000} s)`);
    console.log(`inconsistent answers: ${verdict.inconsistent}; unexpected op failures: ${verdict.unexpectedFailures}`);
    if (uploads) {
      console.log(`resumable uploads on S3: ${uploads.completed} finished, ${uploads.resumed} PATCHes resumed after a failure, ${uploads.unconfirmed} whose last answer was lost, ${uploads.mismatches} read back wrong; failed PATCHes by answer: ${JSON.stringify(uploads.failures)}`);
      for (const e of uploads.examples) console.log(`  ! ${e}`);
    }
    console.log(`bulk uploads: ${bulked.requests} requests, ${bulked.created} files created, ${bulked.retried} requests sent again, ${bulked.createdUnanswered} files found created after a lost answer; failed requests by answer: ${JSON.stringify(bulked.failures)}; lost: ${bulked.lost}; wrong or extra files: ${bulked.wrong}`);
    for (const e of bulked.examples) console.log(`  ! ${e}`);
    const d = deltaStats;
    console.log(`delta uploads: ${d.requests} requests, ${d.acknowledged} acknowledged (${d.ackedLate} found committed after a lost answer), ${d.preconditionFailed} answered 412, ${d.rebased} edits redone on the other device's content; failed requests by kind: ${JSON.stringify(d.failures)}; wrong answers: ${d.wrongAnswers}`);
    const dv = deltaVerdict;
    console.log(`delta files: ${dv.files}; wrong content: ${dv.wrongContent}; lost writes: ${dv.lost}; doubled: ${dv.doubled}; version counts off: ${dv.versionMismatches}; byte counters off: ${dv.quotaMismatches}; unresolved at the end: ${dv.unresolved}`);
    console.log(`staging after the run: ${staging.leftByKills} entries left by the gateway's SIGKILLs, ${staging.newer.length} newer; the sweep removed ${staging.swept}, ${staging.afterSweep} left`);
    for (const e of [...d.examples, ...dv.examples, ...staging.newer]) console.log(`  ! ${e}`);
    for (const line of report) console.log(line);
    for (const e of verdict.examples) console.log(`  ! ${e}`);
    const deltaBad = d.wrongAnswers + (d.failures.hung ?? 0) + dv.wrongContent + dv.lost + dv.doubled + dv.versionMismatches + dv.quotaMismatches + dv.unresolved;
    const stagingBad = staging.newer.length + staging.afterSweep;
    const bad = verdict.lost + verdict.doubled + verdict.orderViolations + verdict.hung + verdict.inconsistent + (uploads?.mismatches ?? 0) + bulked.lost + bulked.wrong + deltaBad + stagingBad;
    exitCode = bad > 0 ? 1 : 0;
    console.log(bad > 0 ? 'RESULT: FAILED' : 'RESULT: OK');
  } finally {
    await Promise.allSettled([gateway.stop('SIGKILL'), ...workers.map((w) => w.stop('SIGKILL'))]);
    for (const s of [gateway, ...workers]) s.close();
    await redis.stop();
    if (rgw) await Rgw.stop(rgw.dir);
    if (args.keep !== 'true') {
      await db.raw(`DROP DATABASE IF EXISTS \`${name}\``).catch(() => undefined);
      await fs.rm(path.join(dir, 'uploads'), { recursive: true, force: true });
    }
    await db.destroy();
  }
  process.exit(exitCode);
}

interface Cast {
  gateway: ServiceProcess;
  workers: ServiceProcess[];
  redis: RedisServer | RedisCluster;
  /** The key whose slot holds the queues on a cluster (the hash tag of the prefix). */
  queueSlotKey: string;
  endAt: number;
  devices: ChaosDevice[];
}

/** The fault cycle, repeated while time remains: a calm spell, then one fault of each kind. */
async function runFaults(c: Cast): Promise<FaultEvent[]> {
  const events: FaultEvent[] = [];
  const pickWorker = () => c.workers[Math.floor(Math.random() * c.workers.length)]!;
  const fault = async (name: string, act: () => Promise<number | void>) => {
    const at = Date.now();
    log(name);
    const endAt = await act();
    events.push({ name, at, endAt: typeof endAt === 'number' ? endAt : at });
  };
  const waitUntil = async (t: number) => {
    while (Date.now() < t) await sleep(100);
  };
  let cycle = 0;
  while (Date.now() + 100_000 < c.endAt || cycle === 0) {
    const t0 = Date.now();
    await waitUntil(t0 + 20_000);
    await fault('SIGKILL a worker, restart it 3 s later', async () => {
      const w = pickWorker();
      await w.stop('SIGKILL');
      await sleep(3000);
      await w.start('worker ready');
    });
    await waitUntil(t0 + 35_000);
    await fault('SIGKILL the gateway, restart it', async () => {
      await c.gateway.stop('SIGKILL');
      await c.gateway.start('gateway listening');
    });
    await waitUntil(t0 + 50_000);
    const redis = c.redis;
    if (redis instanceof RedisCluster) {
      await fault('SIGKILL the Redis master of the queues\' slot; its replica takes over', () => masterFailover(redis, c.queueSlotKey));
      await waitUntil(t0 + 62_000);
      await fault('SIGKILL the Redis master of the queues\' slot again (the restarted node\'s peer)', () => masterFailover(redis, c.queueSlotKey));
    } else {
      await fault('Redis restart with persistence (AOF kept)', () => redis.restart(true));
      await waitUntil(t0 + 62_000);
      await fault('Redis restart without persistence (data lost)', () => redis.restart(false));
    }
    await waitUntil(t0 + 75_000);
    await fault('SIGSTOP a worker for 25 s, then SIGCONT', async () => {
      const w = pickWorker();
      w.signal('SIGSTOP');
      await sleep(25_000);
      w.signal('SIGCONT');
      return Date.now();
    });
    await waitUntil(t0 + 115_000);
    cycle++;
  }
  await waitUntil(c.endAt);
  return events;
}

/**
 * Kills the master that serves `key`'s slot, waits for its replica to be elected (the fault ends
 * there), then starts the dead node again: it rejoins as the new master's replica, so the next
 * round has a replica to fail over to.
 */
async function masterFailover(cluster: RedisCluster, key: string): Promise<number> {
  const master = await cluster.masterOf(key);
  const killedAt = Date.now();
  await cluster.kill(master);
  const successor = await cluster.failedOver(key, master);
  const endAt = Date.now();
  log(`  master ${master} killed; ${successor} serves the slot after ${((endAt - killedAt) / 1000).toFixed(1)} s`);
  await cluster.restart(master);
  return endAt;
}

main().catch((err: unknown) => {
  console.error(`chaos: ${err instanceof Error ? err.stack : String(err)}`);
  process.exit(2);
});
