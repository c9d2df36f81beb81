import { promises as fs } from 'node:fs';
import type { Server } from 'node:http';
import { Cluster } from 'ioredis';
import { loadConfig, type Config } from '../../shared/config';
import { createDb, type Db } from '../../shared/db/knex';
import { createLogger } from '../../shared/logger';
import { connectRedis, masters, type RedisTarget } from '../../shared/redis/redis.connection';
import type { PasswordHasher } from '../../services/gateway/auth/password.hasher';
import type { ChangeHub } from '../../services/gateway/changes/change.hub';
import type { HttpServerOptions } from '../../services/gateway/http/http.server';
import { openGateway, type GatewayOptions } from '../../services/gateway/open.gateway';
import type { BatchSubmitter } from '../../services/gateway/sync/batch.submitter';
import { IsolatedRun } from './isolated.run';
import { emptyPrefix, s3Environment } from './rgw';
import { migratedDatabase } from './schema.template';

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
  const run = await new IsolatedRun('fs_test').open();
  const { name, uploadDir } = run;
  const env: Record<string, string> = {
    ...run.env({ admin: ADMIN, jwtSecret: JWT_SECRET }, { LOG_LEVEL: 'silent', SYNC_TIMEOUT_MS: '15000', ...overrides }),
    // STORAGE_DRIVER=s3: the suite's RGW, under a prefix of this environment's own.
    ...(overrides.STORAGE_DRIVER === 's3' ? { ...s3Environment(`${name}/`), ...overrides } : {}),
  };
  const config = loadConfig(env);
  await migratedDatabase(config.databaseUrl);
  // Opened like the gateway's pool: owner transactions run on it.
  const db = createDb(config.databaseUrl, { max: 10, multipleStatements: true });
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

/** The gateway in this process on an ephemeral port, opened by the function main.ts opens it with. */
export async function startGateway(env: TestEnv, server: HttpServerOptions = {}, options: Pick<GatewayOptions, 'store'> = {}): Promise<RunningGateway> {
  const logger = createLogger('gateway', env.config.logLevel);
  const gateway = await openGateway({ config: env.config, db: env.db, logger, store: options.store, port: 0, host: '127.0.0.1', server });
  return {
    baseUrl: `http://127.0.0.1:${gateway.port}`,
    server: gateway.server,
    sync: gateway.sync,
    changes: gateway.changes,
    hasher: gateway.hasher,
    // Requests still open are cut at once; the environment's pool stays open for the test.
    close: async () => void (await gateway.close(0)),
  };
}
