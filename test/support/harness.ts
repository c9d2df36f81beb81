import { promises as fs } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import { loadConfig, type Config } from '../../shared/config';
import { ContentRepository } from '../../shared/db/repositories/content.repository';
import { createDb, type Db } from '../../shared/db/knex';
import { migrateToLatest } from '../../shared/db/migrations/migrate';
import { createLogger } from '../../shared/logger';
import type { ContentStore } from '../../shared/storage/content.store';
import { createContentStore } from '../../shared/storage/store.factory';
import { claimStore } from '../../shared/storage/store.identity';
import { openMaintenanceQueue } from '../../shared/queue/maintenance.contract';
import { connectRedis, masters, type RedisTarget } from '../../shared/redis/redis.connection';
import { buildGateway } from '../../services/gateway/app';
import type { PasswordHasher } from '../../services/gateway/auth/password.hasher';
import { ensureInitialAdmin } from '../../services/gateway/bootstrap';
import { ChangeHub } from '../../services/gateway/changes/change.hub';
import { createHttpServer, listen, type HttpServerOptions } from '../../services/gateway/http/http.server';
import { BatchSubmitter } from '../../services/gateway/sync/batch.submitter';
import { emptyPrefix, s3Environment } from './rgw';

export const ADMIN = { username: 'admin', password: 'admin-password-1' };
export const JWT_SECRET = 'test-secret-that-is-long-enough-for-hs256-0123456789';

/** An isolated environment: its own database, upload directory and queue prefix. */
export interface TestEnv {
  name: string;
  env: Record<string, string>;
  config: Config;
  uploadDir: string;
  db: Db;
  dropAll(): Promise<void>;
}

export async function createTestEnv(overrides: Record<string, string> = {}): Promise<TestEnv> {
  const name = `fs_test_${randomBytes(5).toString('hex')}`;
  const uploadDir = await fs.mkdtemp(path.join(os.tmpdir(), `${name}-`));
  const env: Record<string, string> = {
    DATABASE_URL: `mysql://root@127.0.0.1:3306/${name}`,
    REDIS_URL: 'redis://127.0.0.1:6379',
    UPLOAD_DIR: uploadDir,
    DATA_DIR: uploadDir,
    JWT_SECRET,
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
    QUEUE_PREFIX: name,
    LOGIN_RATE_LIMIT: '0',
    LOGIN_ADDRESS_RATE_LIMIT: '0',
    REGISTER_RATE_LIMIT: '0',
    LOG_LEVEL: 'silent',
    SYNC_TIMEOUT_MS: '15000',
    ...overrides,
    // STORAGE_DRIVER=s3: the suite's RGW, under a prefix of this environment's own.
    ...(overrides.STORAGE_DRIVER === 's3' ? { ...s3Environment(`${name}/`), ...overrides } : {}),
  };
  const config = loadConfig(env);
  await migrateToLatest(config.databaseUrl);
  const db = createDb(config.databaseUrl, { max: 10 });
  return {
    name,
    env,
    config,
    uploadDir,
    db,
    async dropAll() {
      await db.raw(`DROP DATABASE IF EXISTS \`${name}\``).catch(() => undefined);
      await db.destroy();
      await fs.rm(uploadDir, { recursive: true, force: true });
      if (config.s3) await emptyPrefix(config.s3).catch(() => undefined);
      // A test may have stopped its own Redis by now: its keys went with it.
      await deleteQueueKeys(name, config).catch(() => undefined);
    },
  };
}

/** Removes every Redis key under a test's queue prefix (plain or hash-tagged), on each master. */
export async function deleteQueueKeys(prefix: string, target: RedisTarget = 'redis://127.0.0.1:6379'): Promise<void> {
  const connection = connectRedis(target, 'producer', { enableOfflineQueue: true });
  try {
    if (connection instanceof Cluster) {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the Redis Cluster did not answer')), 5000);
        connection.once('ready', () => resolve(clearTimeout(timer)));
      });
    }
    for (const node of masters(connection)) {
      for (const pattern of [`${prefix}:*`, `{${prefix}}:*`]) {
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
          // One DEL per key: on a cluster the keys of one reply may live in different slots.
          const pipeline = node.pipeline();
          for (const key of keys) pipeline.del(key);
          if (keys.length > 0) await pipeline.exec();
          cursor = next;
        } while (cursor !== '0');
      }
    }
  } finally {
    connection.disconnect();
  }
}

export interface RunningGateway {
  baseUrl: string;
  server: Server;
  sync: BatchSubmitter;
  changes: ChangeHub;
  /** The Argon2 hasher the gateway's routes use, for tests that count what reaches it. */
  hasher: PasswordHasher;
  close(): Promise<void>;
}

/** The gateway app in this process on an ephemeral port, exactly as main.ts wires it. */
export interface GatewayOptions {
  /** The content store instead of the one the configuration names (a test that wraps it). */
  store?: ContentStore;
}

export async function startGateway(env: TestEnv, serverOptions: HttpServerOptions = {}, options: GatewayOptions = {}): Promise<RunningGateway> {
  const logger = createLogger('gateway', env.config.logLevel);
  const sync = new BatchSubmitter(
    { redis: env.config, prefix: env.config.queuePrefix, timeoutMs: env.config.syncTimeoutMs, db: env.db },
    logger,
  );
  const changes = new ChangeHub(
    env.config,
    env.config.queuePrefix,
    { maxHeld: env.config.feedMaxHeld, maxPerUser: env.config.feedMaxHeldPerUser },
    logger,
  );
  const maintenance = openMaintenanceQueue(env.config, env.config.queuePrefix);
  const store = options.store ?? createContentStore(env.config);
  await claimStore(store, new ContentRepository(env.db));
  const gateway = buildGateway({ config: env.config, jwtSecret: JWT_SECRET, db: env.db, sync, changes, logger, opsQueues: [maintenance], store });
  await ensureInitialAdmin(env.config, env.db, gateway.hasher);
  await Promise.all([sync.ready(), changes.ready(), gateway.uploads.ready(), gateway.principals.ready()]);
  const server = await listen(createHttpServer(gateway.app, serverOptions), 0, '127.0.0.1');
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    server,
    sync,
    changes,
    hasher: gateway.hasher,
    async close() {
      await changes.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await Promise.all([sync.close(), maintenance.close(), gateway.close()]);
    },
  };
}
