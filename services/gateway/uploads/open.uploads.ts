import IORedis from 'ioredis';
import { AppError, unavailable } from '../../../shared/errors';
import type { Logger } from '../../../shared/logger';
import { redisOptions } from '../../../shared/queue/sync.contract';

/**
 * Admits a new upload when its owner has fewer than `max` unfinished ones: drops the entries past their
 * expiry, then adds this one scored by its expiry. Answers 0 when admitted, else the earliest expiry
 * (ms) among the owner's uploads, when a place frees at the latest.
 */
const ADMIT = `
redis.call('zremrangebyscore', KEYS[1], '-inf', ARGV[1])
if redis.call('zscore', KEYS[1], ARGV[3]) then return 0 end
if redis.call('zcard', KEYS[1]) >= tonumber(ARGV[4]) then
  return tonumber(redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')[2])
end
redis.call('zadd', KEYS[1], ARGV[2], ARGV[3])
redis.call('pexpireat', KEYS[1], ARGV[2])
return 0`;

/** Longest Retry-After given: a place may free sooner than the earliest expiry (an upload finishes). */
const MAX_RETRY_AFTER_S = 60;

/**
 * The unfinished resumable uploads of each user, counted in Redis so the limit holds across every
 * gateway: one sorted set per user, member the upload id, score its expiry. An upload leaves it when
 * it completes, is terminated or its creation fails (TusStore's `gone` hook), and by its score once
 * it expires, so the workers' expiry sweep need not tell anyone. Should Redis lose the sets, the
 * count starts again from zero: the limit protects other users, it is not an account.
 */
export class OpenUploads {
  private readonly redis: IORedis;
  private readonly keyPrefix: string;
  private readonly max: number;
  private readonly expiryMs: number;

  constructor(options: { redisUrl: string; prefix: string; max: number; expiryMs: number }, logger: Logger) {
    this.max = options.max;
    this.expiryMs = options.expiryMs;
    this.keyPrefix = `${options.prefix}:tus-open:`;
    this.redis = new IORedis(redisOptions(options.redisUrl, 'producer'));
    this.redis.on('error', (err) => logger.warn({ err: err.message }, 'redis open-uploads connection error'));
  }

  /** Counts `uploadId` among the user's open uploads, or throws RATE_LIMITED with Retry-After. */
  async admit(userId: string, uploadId: string): Promise<void> {
    const now = Date.now();
    let earliest: number;
    try {
      earliest = Number(await this.redis.eval(ADMIT, 1, this.keyPrefix + userId, now, now + this.expiryMs, uploadId, this.max));
    } catch {
      throw unavailable('the upload limit cannot be checked right now');
    }
    if (earliest === 0) return;
    const retryAfter = Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil((earliest - now) / 1000)));
    throw new AppError('RATE_LIMITED', `at most ${this.max} unfinished uploads at once: finish, terminate or let one expire first`, {
      retryAfter,
    });
  }

  /** The upload is no longer open (finished, terminated, or never created). */
  async release(userId: string, uploadId: string): Promise<void> {
    await this.redis.zrem(this.keyPrefix + userId, uploadId);
  }

  async close(): Promise<void> {
    if (this.redis.status === 'ready') await this.redis.quit();
    else this.redis.disconnect();
  }
}
