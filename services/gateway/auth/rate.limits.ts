import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit, type ClientRateLimitInfo, type IncrementResponse, type Store } from 'express-rate-limit';
import { RedisStore, type RedisReply } from 'rate-limit-redis';
import { AppError } from '../../../shared/errors';
import { AttemptLimit } from './attempt.limit';
import type { Logger } from '../../../shared/logger';
import { closeRedis, connectRedis, masters, type RedisConnection, type RedisTarget } from '../../../shared/redis/redis.connection';

export const RATE_WINDOW_MS = 60_000;

/**
 * rate-limit-redis loads its Lua scripts once, in `init`; when Redis is unreachable at that moment
 * the rejected load would be reused by every later call and the limit would stay off for good.
 * This store loads them again on the next call instead.
 */
class ReloadingRedisStore extends RedisStore {
  override async increment(key: string): Promise<IncrementResponse> {
    this.incrementScriptSha = this.incrementScriptSha.catch(() => this.loadIncrementScript());
    return super.increment(key);
  }

  override async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    this.getScriptSha = this.getScriptSha.catch(() => this.loadGetScript());
    return super.get(key);
  }
}

/** The client address the limits count: the socket's, or the one a trusted proxy reported. */
export function clientAddress(req: Request): string {
  return ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown');
}

/** Per client address and username (as typed, lowercased), for the per-account sign-in limit. */
export function clientAndUsername(req: Request): string {
  const body = req.body as { username?: unknown } | undefined;
  const username = typeof body?.username === 'string' ? body.username.slice(0, 256).toLowerCase() : '';
  return `${clientAddress(req)}|${username}`;
}

function retryAfterSeconds(resetTime: Date | undefined): number {
  if (!resetTime) return Math.ceil(RATE_WINDOW_MS / 1000);
  return Math.max(1, Math.ceil((resetTime.getTime() - Date.now()) / 1000));
}

const passThrough: RequestHandler = (_req, _res, next) => next();

/**
 * Fixed-window limits kept in Redis, so every gateway counts against the same budget. When Redis
 * cannot answer (down, or slower than a second), requests are let through and a warning is logged
 * at most every 10 s: sign-ins stay possible while Redis is away, and the Argon2 concurrency limiter
 * still bounds what a flood can cost. Keys live under `<QUEUE_PREFIX>:rl:<limit name>:`.
 */
export class RateLimits {
  private readonly redis: RedisConnection;
  private lastWarning = 0;

  constructor(
    redis: RedisTarget,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {
    // A command fails after one reconnect attempt or one second instead of queueing for long.
    this.redis = connectRedis(redis, 'producer', { enableOfflineQueue: true, commandTimeout: 1000, connectionName: 'rate-limits' });
    this.redis.on('error', (err) => this.warn(err, 'rate limit store: Redis connection error'));
  }

  /** A store of its own for one limit (express-rate-limit wants one store per limiter). */
  store(name: string): Store {
    return new ReloadingRedisStore({ prefix: `${this.prefix}:rl:${name}:`, sendCommandCluster: ({ command }) => this.send(command) });
  }

  /**
   * A command of the store. Its scripts are loaded on every master: on a cluster a script lives on
   * the node that loaded it, and the EVALSHA that follows goes to whichever master holds the key
   * (after a failover the new master answers NOSCRIPT, and the store loads them again).
   */
  private async send(command: string[]): Promise<RedisReply> {
    const [name, ...args] = command;
    if (name?.toUpperCase() === 'SCRIPT') {
      const replies = await Promise.all(masters(this.redis).map((node) => node.call(name, ...args)));
      return replies[0] as RedisReply;
    }
    return (await this.redis.call(name!, ...args)) as RedisReply;
  }

  /**
   * Middleware allowing `perMinute` requests per key and window; 0 disables it. Over the limit: 429
   * RATE_LIMITED with Retry-After, and the request goes no further.
   */
  limit(name: string, perMinute: number, key: (req: Request) => string, message: string): RequestHandler {
    if (perMinute <= 0) return passThrough;
    return rateLimit({
      windowMs: RATE_WINDOW_MS,
      limit: perMinute,
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      store: this.store(name),
      keyGenerator: key,
      passOnStoreError: true,
      // X-Forwarded-For is ignored on purpose unless TRUST_PROXY says which proxies to believe.
      validate: { xForwardedForHeader: false },
      logger: { error: (err, msg) => this.warn(err, msg ?? 'rate limit error'), warn: (err, msg) => this.warn(err, msg ?? 'rate limit warning') },
      handler: (req, _res, next) => {
        const info = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit;
        next(new AppError('RATE_LIMITED', message, { retryAfter: retryAfterSeconds(info?.resetTime) }));
      },
    });
  }

  /**
   * Sign-in attempts counted before the password is checked (attempt.limit.ts), `perMinute` per key;
   * 0 disables it. Under the same keys as `limit(name, ...)`, so both count against one budget.
   */
  attempts(name: string, perMinute: number): AttemptLimit {
    return new AttemptLimit(`${this.prefix}:rl:${name}:`, perMinute, RATE_WINDOW_MS, (script, key, args) => this.redis.call('EVAL', script, 1, key, ...args), (err) =>
      this.warn(err, 'sign-in attempt limit: Redis unavailable, not counted'),
    );
  }

  async close(): Promise<void> {
    await closeRedis(this.redis);
  }

  private warn(err: unknown, message: string): void {
    const now = Date.now();
    if (now - this.lastWarning < 10_000) return;
    this.lastWarning = now;
    this.logger.warn({ reason: err instanceof Error ? err.message : String(err) }, `${message}; requests pass without rate limiting while Redis is unavailable`);
  }
}
