import { AppError } from '../../../shared/errors';

/** Runs a Lua script on one key; the Redis connection of RateLimits. */
export type KeyScript = (script: string, key: string, args: Array<string | number>) => Promise<unknown>;

/**
 * Counts the attempt and reads what is left of the window in one step, so parallel attempts each see
 * a distinct count. The key and its expiry are those rate-limit-redis keeps for a fixed window, so
 * the sign-in middleware of POST /v1/auth/login and these attempts share one budget.
 */
const TAKE = `
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if hits == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { hits, ttl }`;

/** Only inside a live window: a give-back after the window ended must not start a new one below zero. */
const GIVE_BACK = `
if redis.call('PTTL', KEYS[1]) > 0 and tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then
  return redis.call('DECR', KEYS[1])
end
return 0`;

const PEEK = `return { tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[1]) }`;

/** One counted attempt. */
export interface Attempt {
  /**
   * The password was right, or was never checked (the check failed to run): the attempt stops
   * counting, so only failures use up the limit. Idempotent.
   */
  succeeded(): Promise<void>;
}

const settled: Attempt = { succeeded: async () => undefined };

/**
 * A limit of sign-in attempts per key and fixed window, kept in Redis so every gateway shares it.
 * An attempt is counted BEFORE its password is checked (`take`), atomically, so a burst of parallel
 * guesses checks at most `perWindow` passwords per key and window, never one per request of the
 * burst; a right password gives its attempt back (`succeeded`). Used for every sign-in that checks
 * a secret: HTTP Basic on /dav/ and /admin/queues, the current password of new app passwords, link
 * passwords. When Redis cannot answer, attempts pass uncounted (as the sign-in limits do) and the
 * Argon2 concurrency limiter still bounds what they cost.
 */
export class AttemptLimit {
  constructor(
    private readonly prefix: string,
    private readonly perWindow: number,
    private readonly windowMs: number,
    private readonly run: KeyScript,
    private readonly onStoreError: (err: unknown) => void = () => undefined,
  ) {}

  /**
   * Refuses, like `take`, when `key` has used up its limit, without counting anything: for a
   * credential verified just before, which checks no password but must not outlast a lock-out.
   */
  async check(key: string, message: string): Promise<void> {
    if (this.perWindow <= 0) return;
    let reply: unknown;
    try {
      reply = await this.run(PEEK, this.prefix + key, []);
    } catch (err) {
      this.onStoreError(err);
      return;
    }
    const [hits, ttl] = (reply as [number, number]).map(Number) as [number, number];
    if (hits >= this.perWindow && ttl > 0) throw this.refusal(message, ttl);
  }

  /** Counts one attempt on `key`; RATE_LIMITED (with Retry-After) when it goes beyond the limit. */
  async take(key: string, message: string): Promise<Attempt> {
    if (this.perWindow <= 0) return settled;
    const redisKey = this.prefix + key;
    let reply: unknown;
    try {
      reply = await this.run(TAKE, redisKey, [this.windowMs]);
    } catch (err) {
      this.onStoreError(err);
      return settled;
    }
    const [hits, ttl] = (reply as [number, number]).map(Number) as [number, number];
    if (hits > this.perWindow) {
      throw this.refusal(message, ttl);
    }
    let given = false;
    return {
      succeeded: async () => {
        if (given) return;
        given = true;
        await this.run(GIVE_BACK, redisKey, []).catch((err: unknown) => this.onStoreError(err));
      },
    };
  }

  private refusal(message: string, ttlMs: number): AppError {
    return new AppError('RATE_LIMITED', message, { retryAfter: Math.max(1, Math.ceil(ttlMs / 1000)) });
  }
}

/**
 * Takes one attempt on each limit in order (the first refusal ends it, as the middleware chain of the
 * login does); `succeeded` gives every taken one back.
 */
export async function takeAttempts(limits: ReadonlyArray<readonly [limit: AttemptLimit, key: string, message: string]>): Promise<Attempt> {
  const taken: Attempt[] = [];
  for (const [limit, key, message] of limits) taken.push(await limit.take(key, message));
  return { succeeded: async () => void (await Promise.all(taken.map((a) => a.succeeded()))) };
}
