import Joi from 'joi';
import { isIP } from 'node:net';
import path from 'node:path';

/** Everything the services read from the environment, validated once at start-up. */
export interface Config {
  readonly databaseUrl: string;
  readonly redisUrl: string;
  readonly port: number;
  readonly workerPort: number;
  readonly dataDir: string;
  readonly uploadDir: string;
  readonly maxUploadBytes: number;
  /** How long an unfinished resumable upload is kept, in milliseconds (UPLOAD_EXPIRY_HOURS). */
  readonly uploadExpiryMs: number;
  /** Unfinished resumable uploads one user may have at once (MAX_OPEN_UPLOADS). */
  readonly maxOpenUploads: number;
  readonly jwtSecret: string | undefined;
  readonly admin: { readonly username: string; readonly password: string; readonly email: string | null } | undefined;
  readonly loginRateLimit: number;
  readonly loginAddressRateLimit: number;
  readonly registerRateLimit: number;
  /** Express's `trust proxy` value: false (the socket's address), a hop count, or trusted addresses. */
  readonly trustProxy: false | number | string[];
  readonly loginConcurrency: number;
  readonly loginQueueTimeoutMs: number;
  readonly syncTimeoutMs: number;
  readonly syncConcurrency: number;
  readonly syncLockMs: number;
  readonly syncBatchDeadlineMs: number;
  readonly syncLockWaitS: number;
  readonly queuePrefix: string;
  readonly logLevel: string;
  readonly shutdownTimeoutMs: number;
  readonly feedMaxHeld: number;
  readonly feedMaxHeldPerUser: number;
  /** How long a gateway reuses the check that a token's user and device exist; 0 checks every request. */
  readonly authCacheMs: number;
  /** Days a deleted resource stays restorable; fractional values allowed (tests use seconds). */
  readonly trashRetentionDays: number;
}

export class ConfigError extends Error {}

const schema = Joi.object({
  DATABASE_URL: Joi.string().uri({ scheme: ['mysql'] }).default('mysql://root@127.0.0.1:3306/filesync'),
  REDIS_URL: Joi.string().uri({ scheme: ['redis', 'rediss'] }).default('redis://127.0.0.1:6379'),
  PORT: Joi.number().integer().min(0).max(65535).default(8080),
  WORKER_PORT: Joi.number().integer().min(0).max(65535).default(9091),
  DATA_DIR: Joi.string().default('./data'),
  UPLOAD_DIR: Joi.string(),
  MAX_UPLOAD_BYTES: Joi.number().integer().min(1).max(Number.MAX_SAFE_INTEGER).default(104857600),
  // Fractional hours are allowed, so tests can let an upload expire within seconds.
  UPLOAD_EXPIRY_HOURS: Joi.number().greater(0).max(24 * 365).default(24),
  MAX_OPEN_UPLOADS: Joi.number().integer().min(1).max(100_000).default(20),
  JWT_SECRET: Joi.string().min(32),
  ADMIN_USERNAME: Joi.string().pattern(/^[A-Za-z0-9._-]{3,64}$/).message('ADMIN_USERNAME must be 3-64 characters of A-Z a-z 0-9 . _ -'),
  ADMIN_PASSWORD: Joi.string().min(8).max(1024),
  ADMIN_EMAIL: Joi.string().email({ tlds: false }).max(254),
  LOGIN_RATE_LIMIT: Joi.number().integer().min(0).default(20),
  LOGIN_ADDRESS_RATE_LIMIT: Joi.number().integer().min(0).default(60),
  REGISTER_RATE_LIMIT: Joi.number().integer().min(0).default(30),
  TRUST_PROXY: Joi.string().custom(parseTrustProxy).default(false),
  LOGIN_CONCURRENCY: Joi.number().integer().min(1).max(64).default(2),
  LOGIN_QUEUE_TIMEOUT_MS: Joi.number().integer().min(0).default(10000),
  SYNC_TIMEOUT_MS: Joi.number().integer().min(1).default(30000),
  SYNC_CONCURRENCY: Joi.number().integer().min(1).max(256).default(8),
  SYNC_LOCK_MS: Joi.number().integer().min(1000).default(5000),
  SYNC_BATCH_DEADLINE_MS: Joi.number().integer().min(1000).default(10000),
  SYNC_LOCK_WAIT_S: Joi.number().integer().min(1).max(3600).default(5),
  QUEUE_PREFIX: Joi.string().pattern(/^[A-Za-z0-9_-]{1,64}$/).default('filesync'),
  LOG_LEVEL: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').default('info'),
  SHUTDOWN_TIMEOUT_MS: Joi.number().integer().min(0).default(30000),
  FEED_MAX_HELD: Joi.number().integer().min(1).default(10000),
  FEED_MAX_HELD_PER_USER: Joi.number().integer().min(1).default(50),
  AUTH_CACHE_MS: Joi.number().integer().min(0).max(60000).default(5000),
  TRASH_RETENTION_DAYS: Joi.number().positive().max(36500).default(30),
})
  .and('ADMIN_USERNAME', 'ADMIN_PASSWORD')
  .unknown(true);

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * TRUST_PROXY: `false` (default, the client address is the socket's), a number of proxy hops, or a
 * comma-separated list of trusted proxy addresses, subnets (CIDR) or the names loopback, linklocal,
 * uniquelocal. `true` is refused: it would trust any X-Forwarded-For, so anyone could pick the
 * address the rate limits count.
 */
function parseTrustProxy(raw: string): false | number | string[] {
  const text = raw.trim();
  if (text === 'false') return false;
  if (/^\d{1,2}$/.test(text)) return Number(text) === 0 ? false : Number(text);
  const entries = text.split(',').map((e) => e.trim());
  for (const entry of entries) {
    if (PROXY_NAMES.includes(entry)) continue;
    const [address, bits, ...rest] = entry.split('/');
    const family = isIP(address ?? '');
    const maxBits = family === 6 ? 128 : 32;
    const bitsOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
    if (family === 0 || !bitsOk || rest.length > 0) {
      throw new Error(`TRUST_PROXY must be false, a hop count, or addresses/subnets (or ${PROXY_NAMES.join(', ')}), comma-separated; not "${entry}"`);
    }
  }
  return entries;
}

/** Every environment variable the services read; deployment files and .env.example are checked against it. */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze(Object.keys(schema.describe().keys ?? {}));

/**
 * Reads and validates the environment. Throws ConfigError naming the offending variable, so the
 * process can print one clear line and exit.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, string> = {};
  for (const key of CONFIG_VARIABLES) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const { value, error } = schema.validate(input, { abortEarly: true, convert: true });
  if (error) {
    const detail = error.details[0];
    const name = detail?.context?.key ?? detail?.path.join('.') ?? 'environment';
    throw new ConfigError(`invalid configuration: ${name}: ${error.message}`);
  }
  const dataDir = path.resolve(value.DATA_DIR);
  return Object.freeze({
    databaseUrl: value.DATABASE_URL,
    redisUrl: value.REDIS_URL,
    port: value.PORT,
    workerPort: value.WORKER_PORT,
    dataDir,
    uploadDir: path.resolve(value.UPLOAD_DIR ?? path.join(value.DATA_DIR, 'uploads')),
    maxUploadBytes: value.MAX_UPLOAD_BYTES,
    uploadExpiryMs: Math.round(value.UPLOAD_EXPIRY_HOURS * 3600 * 1000),
    maxOpenUploads: value.MAX_OPEN_UPLOADS,
    jwtSecret: value.JWT_SECRET,
    admin: value.ADMIN_USERNAME
      ? Object.freeze({ username: value.ADMIN_USERNAME, password: value.ADMIN_PASSWORD, email: value.ADMIN_EMAIL ?? null })
      : undefined,
    loginRateLimit: value.LOGIN_RATE_LIMIT,
    loginAddressRateLimit: value.LOGIN_ADDRESS_RATE_LIMIT,
    registerRateLimit: value.REGISTER_RATE_LIMIT,
    trustProxy: value.TRUST_PROXY,
    loginConcurrency: value.LOGIN_CONCURRENCY,
    loginQueueTimeoutMs: value.LOGIN_QUEUE_TIMEOUT_MS,
    syncTimeoutMs: value.SYNC_TIMEOUT_MS,
    syncConcurrency: value.SYNC_CONCURRENCY,
    syncLockMs: value.SYNC_LOCK_MS,
    syncBatchDeadlineMs: value.SYNC_BATCH_DEADLINE_MS,
    syncLockWaitS: value.SYNC_LOCK_WAIT_S,
    queuePrefix: value.QUEUE_PREFIX,
    logLevel: value.LOG_LEVEL,
    shutdownTimeoutMs: value.SHUTDOWN_TIMEOUT_MS,
    feedMaxHeld: value.FEED_MAX_HELD,
    feedMaxHeldPerUser: value.FEED_MAX_HELD_PER_USER,
    authCacheMs: value.AUTH_CACHE_MS,
    trashRetentionDays: value.TRASH_RETENTION_DAYS,
  });
}
