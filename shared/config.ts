import Joi from 'joi';
import path from 'node:path';
import { parseClusterNodes, type RedisNode } from './redis/redis.connection';
import { parseTrustProxy } from './trust.proxy';

/** Everything the services read from the environment, validated once at start-up. */
export interface Config {
  readonly databaseUrl: string;
  readonly redisUrl: string;
  /** REDIS_CLUSTER_NODES: when set, every use of Redis goes to this cluster and redisUrl is unused. */
  readonly redisClusterNodes: readonly RedisNode[] | undefined;
  /** HOST: the address the gateway and the worker's monitoring endpoints listen on (0.0.0.0: every IPv4 interface). */
  readonly host: string;
  readonly port: number;
  readonly workerPort: number;
  readonly dataDir: string;
  readonly uploadDir: string;
  /** STORAGE_DRIVER: where content lives, UPLOAD_DIR (`local`) or an S3 bucket (`s3`, with `s3` below). */
  readonly storageDriver: 'local' | 's3';
  readonly s3: S3Config | undefined;
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
  /** Thumbnail jobs a worker runs at once, each on one core (THUMBNAIL_CONCURRENCY). */
  readonly thumbnailConcurrency: number;
  /** Whole uploads of large files ask the workers for their chunk lists after the commit (CHUNK_LISTS_AHEAD). */
  readonly chunkListsAhead: boolean;
  /** One user's writes holding a database connection at once, per gateway and per worker process. */
  readonly userWriteConcurrency: number;
  /** How long a gateway holds a user's write over that bound before 503 (USER_WRITE_WAIT_MS). */
  readonly userWriteWaitMs: number;
  readonly queuePrefix: string;
  readonly logLevel: string;
  readonly shutdownTimeoutMs: number;
  /** A response whose reader takes no byte for this long is closed. */
  readonly responseStallMs: number;
  readonly feedMaxHeld: number;
  readonly feedMaxHeldPerUser: number;
  /** How long a gateway reuses the check that a token's user and device exist; 0 checks every request. */
  readonly authCacheMs: number;
  /** Days a deleted resource stays restorable; fractional values allowed (tests use seconds). */
  readonly trashRetentionDays: number;
  /** Quota of a new user in bytes; null for none (DEFAULT_QUOTA_BYTES=0). */
  readonly defaultQuotaBytes: number | null;
  /** Days a replaced content is kept as a version; fractional values allowed (tests use seconds). */
  readonly versionRetentionDays: number;
  /** Versions kept per file, the oldest dropped first; 0 keeps none. */
  readonly maxVersions: number;
  /** PUBLIC_URL: the origin share-link URLs start with; undefined uses each request's own origin. */
  readonly publicUrl: string | undefined;
  /** Transfers through one owner's share links served at once per gateway (LINK_TRANSFERS_PER_OWNER). */
  readonly linkTransfersPerOwner: number;
  /** The owner's own archives (GET /v1/archive) streamed at once per user per gateway (ARCHIVES_PER_USER). */
  readonly archivesPerUser: number;
}

/** Where content lives with STORAGE_DRIVER=s3. The credentials are never logged. */
export interface S3Config {
  readonly bucket: string;
  /** Prepended to every key, e.g. `filesync/`; may be empty. */
  readonly prefix: string;
  /** An S3-compatible endpoint; undefined for AWS itself. */
  readonly endpoint: string | undefined;
  readonly region: string;
  readonly forcePathStyle: boolean;
  /** Static credentials; undefined lets the AWS SDK's default chain find them (environment, web identity, instance role). */
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string } | undefined;
  /** S3_DOWNLOADS: whole-content downloads streamed through the gateway (`proxy`, also when absent) or answered with a presigned URL (`redirect`). */
  readonly downloads?: 'proxy' | 'redirect';
  /** S3_PUBLIC_ENDPOINT: the endpoint clients reach the store on, for presigned URLs; undefined: the endpoint itself. */
  readonly publicEndpoint?: string;
}

export class ConfigError extends Error {}

const schema = Joi.object({
  DATABASE_URL: Joi.string().uri({ scheme: ['mysql'] }).default('mysql://root@127.0.0.1:3306/filesync'),
  REDIS_URL: Joi.string().uri({ scheme: ['redis', 'rediss'] }).default('redis://127.0.0.1:6379'),
  REDIS_CLUSTER_NODES: Joi.string().custom(parseClusterNodes),
  HOST: Joi.string().hostname().default('127.0.0.1'),
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
  THUMBNAIL_CONCURRENCY: Joi.number().integer().min(1).max(64).default(1),
  CHUNK_LISTS_AHEAD: Joi.boolean().default(true),
  USER_WRITE_CONCURRENCY: Joi.number().integer().min(1).max(64).default(2),
  USER_WRITE_WAIT_MS: Joi.number().integer().min(0).max(600000).default(10000),
  PUBLIC_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  LINK_TRANSFERS_PER_OWNER: Joi.number().integer().min(1).max(1024).default(8),
  ARCHIVES_PER_USER: Joi.number().integer().min(1).max(1024).default(2),
  QUEUE_PREFIX: Joi.string().pattern(/^[A-Za-z0-9_-]{1,64}$/).default('filesync'),
  LOG_LEVEL: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').default('info'),
  SHUTDOWN_TIMEOUT_MS: Joi.number().integer().min(0).default(30000),
  RESPONSE_STALL_MS: Joi.number().integer().min(1000).max(3600000).default(60000),
  FEED_MAX_HELD: Joi.number().integer().min(1).default(10000),
  FEED_MAX_HELD_PER_USER: Joi.number().integer().min(1).default(50),
  AUTH_CACHE_MS: Joi.number().integer().min(0).max(60000).default(5000),
  TRASH_RETENTION_DAYS: Joi.number().positive().max(36500).default(30),
  DEFAULT_QUOTA_BYTES: Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
  VERSION_RETENTION_DAYS: Joi.number().positive().max(36500).default(30),
  MAX_VERSIONS: Joi.number().integer().min(0).max(100000).default(50),
  STORAGE_DRIVER: Joi.string().valid('local', 's3').default('local'),
  S3_BUCKET: Joi.string()
    .pattern(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/)
    .message('S3_BUCKET must be a bucket name (3-63 characters of a-z 0-9 . -)')
    .when('STORAGE_DRIVER', { is: 's3', then: Joi.required() }),
  S3_PREFIX: Joi.string()
    .pattern(/^(?!\/)(?!.*\/\/)[A-Za-z0-9!_.*'()\/-]{0,512}$/)
    .message('S3_PREFIX must be letters, digits and !_.*\'()-/ without a leading or doubled slash'),
  S3_ENDPOINT: Joi.string().uri({ scheme: ['http', 'https'] }),
  S3_REGION: Joi.string().pattern(/^[a-z0-9-]{1,64}$/).default('us-east-1'),
  S3_FORCE_PATH_STYLE: Joi.boolean(),
  S3_ACCESS_KEY_ID: Joi.string().max(256),
  S3_SECRET_ACCESS_KEY: Joi.string().max(256),
  S3_DOWNLOADS: Joi.string().valid('proxy', 'redirect').default('proxy'),
  // The base presigned URLs start with: no query or fragment to mix into theirs.
  S3_PUBLIC_ENDPOINT: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .pattern(/^[^?#]*$/)
    .message('S3_PUBLIC_ENDPOINT must be an http(s) URL without a query or fragment, such as https://s3.example.com'),
})
  .and('ADMIN_USERNAME', 'ADMIN_PASSWORD')
  .and('S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY')
  .unknown(true);

/** Every environment variable the services read; deployment files and .env.example are checked against it. */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze(Object.keys(schema.describe().keys ?? {}));

/**
 * Who reads the configuration: a service checks only the variables it uses, so a mistake is reported
 * by the process it concerns; `all` (tests, and what reads for every service) checks every one.
 */
export type ConfigReader = 'all' | 'gateway' | 'worker' | 'tool';

/** Variables only the gateway uses. */
const GATEWAY_ONLY: readonly string[] = [
  'PORT', 'JWT_SECRET', 'ADMIN_USERNAME', 'ADMIN_PASSWORD', 'ADMIN_EMAIL', 'LOGIN_RATE_LIMIT',
  'LOGIN_ADDRESS_RATE_LIMIT', 'REGISTER_RATE_LIMIT', 'TRUST_PROXY', 'LOGIN_CONCURRENCY', 'LOGIN_QUEUE_TIMEOUT_MS',
  'AUTH_CACHE_MS', 'FEED_MAX_HELD', 'FEED_MAX_HELD_PER_USER', 'SYNC_TIMEOUT_MS', 'CHUNK_LISTS_AHEAD',
];
/** Variables only the worker uses. */
const WORKER_ONLY: readonly string[] = ['WORKER_PORT', 'SYNC_CONCURRENCY', 'SYNC_LOCK_MS', 'SYNC_BATCH_DEADLINE_MS', 'SYNC_LOCK_WAIT_S', 'TRASH_RETENTION_DAYS', 'THUMBNAIL_CONCURRENCY'];
/** Where the services listen: tools listen nowhere. */
const SERVICES_ONLY: readonly string[] = ['HOST'];

function readsVariable(reader: ConfigReader, key: string): boolean {
  if (reader === 'all') return true;
  if (GATEWAY_ONLY.includes(key)) return reader === 'gateway';
  if (WORKER_ONLY.includes(key)) return reader === 'worker';
  if (SERVICES_ONLY.includes(key)) return reader !== 'tool';
  return true;
}

/** One sentence naming the variable, from the validator's first complaint; never a value (it may be a secret). */
function describeError(error: Joi.ValidationError): string {
  const detail = error.details[0];
  const context = (detail?.context ?? {}) as Record<string, unknown>;
  const list = (names: unknown) => (Array.isArray(names) ? names.join(' and ') : String(names));
  if (detail?.type === 'object.and') return `${list(context.missing)} must be set when ${list(context.present)} is`;
  if (detail?.type === 'object.with') return `${String(context.peer)} must be set when ${String(context.main)} is`;
  if (detail?.type === 'any.custom' && context.error instanceof Error) return context.error.message;
  return detail?.message ?? error.message;
}

/**
 * Reads and validates the environment, the variables `reader` uses. Throws ConfigError with one
 * sentence naming the offending variable, so the process can print one clear line and exit.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, reader: ConfigReader = 'all'): Config {
  const input: Record<string, string> = {};
  for (const key of CONFIG_VARIABLES) {
    const value = env[key];
    if (value !== undefined && value !== '' && readsVariable(reader, key)) input[key] = value;
  }
  const { value, error } = schema.validate(input, { abortEarly: true, convert: true, errors: { wrap: { label: false } } });
  if (error) throw new ConfigError(describeError(error));
  const dataDir = path.resolve(value.DATA_DIR);
  return Object.freeze({
    databaseUrl: value.DATABASE_URL,
    redisUrl: value.REDIS_URL,
    redisClusterNodes: value.REDIS_CLUSTER_NODES?.length ? Object.freeze(value.REDIS_CLUSTER_NODES.map((n: RedisNode) => Object.freeze(n))) : undefined,
    host: value.HOST,
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
    thumbnailConcurrency: value.THUMBNAIL_CONCURRENCY,
    chunkListsAhead: value.CHUNK_LISTS_AHEAD,
    userWriteConcurrency: value.USER_WRITE_CONCURRENCY,
    userWriteWaitMs: value.USER_WRITE_WAIT_MS,
    publicUrl: value.PUBLIC_URL === undefined ? undefined : String(value.PUBLIC_URL).replace(/\/+$/, ''),
    linkTransfersPerOwner: value.LINK_TRANSFERS_PER_OWNER,
    archivesPerUser: value.ARCHIVES_PER_USER,
    queuePrefix: value.QUEUE_PREFIX,
    logLevel: value.LOG_LEVEL,
    shutdownTimeoutMs: value.SHUTDOWN_TIMEOUT_MS,
    responseStallMs: value.RESPONSE_STALL_MS,
    feedMaxHeld: value.FEED_MAX_HELD,
    feedMaxHeldPerUser: value.FEED_MAX_HELD_PER_USER,
    authCacheMs: value.AUTH_CACHE_MS,
    trashRetentionDays: value.TRASH_RETENTION_DAYS,
    defaultQuotaBytes: value.DEFAULT_QUOTA_BYTES === 0 ? null : value.DEFAULT_QUOTA_BYTES,
    versionRetentionDays: value.VERSION_RETENTION_DAYS,
    maxVersions: value.MAX_VERSIONS,
    storageDriver: value.STORAGE_DRIVER,
    s3: value.STORAGE_DRIVER === 's3' ? s3Config(value) : undefined,
  });
}

function s3Config(value: Record<string, any>): S3Config {
  const credentials = value.S3_ACCESS_KEY_ID ? { accessKeyId: value.S3_ACCESS_KEY_ID, secretAccessKey: value.S3_SECRET_ACCESS_KEY } : undefined;
  const s3: S3Config = {
    bucket: value.S3_BUCKET,
    prefix: value.S3_PREFIX ?? '',
    endpoint: value.S3_ENDPOINT,
    region: value.S3_REGION,
    forcePathStyle: value.S3_FORCE_PATH_STYLE ?? value.S3_ENDPOINT !== undefined,
    credentials: undefined,
    downloads: value.S3_DOWNLOADS,
    publicEndpoint: value.S3_PUBLIC_ENDPOINT,
  };
  // Not enumerable: a log line or a JSON dump of the configuration never shows the secret.
  Object.defineProperty(s3, 'credentials', { value: credentials && Object.freeze(credentials), enumerable: false });
  return Object.freeze(s3);
}
