import { randomBytes } from 'node:crypto';
import { ERRORS, type Lock, type Locker, type RequestRelease } from '@tus/server';
import { unavailable } from '../../../shared/errors';
import type { Logger } from '../../../shared/logger';
import { closeRedis, connectRedis, type RedisConnection, type RedisTarget } from '../../../shared/redis/redis.connection';

export interface RedisLockerOptions {
  redis: RedisTarget;
  prefix: string;
  /** A lock not renewed for this long lapses (its holder died); renewed every third of it. */
  ttlMs?: number;
  /** How long a request waits for a lock held elsewhere before it gives up (500, the client retries). */
  acquireTimeoutMs?: number;
  /** Pause between attempts while the lock is held elsewhere. */
  retryMs?: number;
}

// Renew and release only a lock this holder still owns: another may have taken it after it lapsed.
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * The tus server's lock on an upload, shared by every gateway through Redis, so PATCH, HEAD and
 * DELETE of one upload never interleave whichever gateway each reaches.
 *
 * A lock is `SET key token NX PX ttl`, renewed while held and released only by its holder. tus wants
 * a holder to let go when another request asks for the upload (the client reconnected after a cut;
 * the old request may sit on a half-open connection): a waiter publishes the upload id, and the
 * gateway holding it calls that request's release callback, which ends its PATCH cleanly.
 */
export class RedisLocker implements Locker {
  private readonly redis: RedisConnection;
  private readonly subscriber: RedisConnection;
  private readonly channel: string;
  private readonly keyPrefix: string;
  readonly ttlMs: number;
  readonly acquireTimeoutMs: number;
  readonly retryMs: number;
  /** Locks held by this process: upload id -> the holding request's release callback. */
  private readonly held = new Map<string, RequestRelease>();
  private readonly subscribed: Promise<unknown>;

  constructor(
    options: RedisLockerOptions,
    private readonly logger: Logger,
  ) {
    this.ttlMs = options.ttlMs ?? 30_000;
    this.acquireTimeoutMs = options.acquireTimeoutMs ?? 30_000;
    this.retryMs = options.retryMs ?? 50;
    this.keyPrefix = `${options.prefix}:tus-lock:`;
    this.channel = `${options.prefix}:tus-lock-release`;
    this.redis = connectRedis(options.redis, 'producer');
    this.redis.on('error', (err) => logger.warn({ err: err.message }, 'redis upload lock connection error'));
    this.subscriber = connectRedis(options.redis, 'blocking');
    this.subscriber.on('error', (err) => logger.warn({ err: err.message }, 'redis upload lock subscriber error'));
    this.subscriber.on('message', (_channel: string, id: string) => void this.held.get(id)?.());
    this.subscribed = this.subscriber.subscribe(this.channel).catch(() => undefined);
  }

  newLock(id: string): Lock {
    return new RedisLock(this, id);
  }

  /** Resolves once both connections are up: the lock commands fail fast rather than queue while Redis is away. */
  async ready(): Promise<void> {
    const connected = this.redis.status === 'ready' ? Promise.resolve() : new Promise<void>((resolve) => this.redis.once('ready', () => resolve()));
    await Promise.all([this.subscribed, connected]);
  }

  /** @internal Throws SERVICE_UNAVAILABLE while Redis does not answer: the client retries the request. */
  async tryAcquire(id: string, token: string): Promise<boolean> {
    try {
      return (await this.redis.set(this.keyPrefix + id, token, 'PX', this.ttlMs, 'NX')) === 'OK';
    } catch {
      throw unavailable('uploads cannot be locked right now', 2);
    }
  }

  /** @internal */
  async renew(id: string, token: string): Promise<boolean> {
    return (await this.redis.eval(RENEW, 1, this.keyPrefix + id, token, this.ttlMs)) === 1;
  }

  /** @internal */
  async release(id: string, token: string): Promise<void> {
    await this.redis.eval(RELEASE, 1, this.keyPrefix + id, token);
  }

  /** @internal Asks whichever gateway holds the lock to let its request go. */
  async askRelease(id: string): Promise<void> {
    const local = this.held.get(id);
    if (local) await local();
    else await this.redis.publish(this.channel, id);
  }

  /** @internal */
  track(id: string, release: RequestRelease): void {
    this.held.set(id, release);
  }

  /** @internal */
  untrack(id: string, release: RequestRelease): void {
    if (this.held.get(id) === release) this.held.delete(id);
  }

  warn(message: string, id: string, err: unknown): void {
    this.logger.warn({ err: err instanceof Error ? err.message : String(err), uploadId: id }, message);
  }

  async close(): Promise<void> {
    for (const release of this.held.values()) void release();
    // QUIT lets pending replies arrive; a connection already down is simply dropped.
    await Promise.allSettled([this.redis, this.subscriber].map(closeRedis));
  }
}

class RedisLock implements Lock {
  private readonly token = randomBytes(16).toString('hex');
  private renewal: NodeJS.Timeout | undefined;
  private release: RequestRelease | undefined;

  constructor(
    private readonly locker: RedisLocker,
    private readonly id: string,
  ) {}

  async lock(signal: AbortSignal, requestRelease: RequestRelease): Promise<void> {
    const deadline = Date.now() + this.locker.acquireTimeoutMs;
    let asked = false;
    for (;;) {
      if (signal.aborted) throw ERRORS.ERR_LOCK_TIMEOUT;
      if (await this.locker.tryAcquire(this.id, this.token)) break;
      if (!asked) {
        asked = true;
        await this.locker.askRelease(this.id).catch(() => undefined);
      }
      if (Date.now() > deadline) throw ERRORS.ERR_LOCK_TIMEOUT;
      await new Promise((resolve) => setTimeout(resolve, this.locker.retryMs));
    }
    this.release = requestRelease;
    this.locker.track(this.id, requestRelease);
    this.renewal = setInterval(() => {
      this.locker.renew(this.id, this.token).then(
        (owned) => {
          // Lost (Redis lost the key, or this process stalled past the TTL): stop writing.
          if (!owned) void requestRelease();
        },
        (err: unknown) => this.locker.warn('could not renew an upload lock', this.id, err),
      );
    }, Math.max(50, Math.floor(this.locker.ttlMs / 3)));
    this.renewal.unref();
  }

  async unlock(): Promise<void> {
    clearInterval(this.renewal);
    if (this.release) this.locker.untrack(this.id, this.release);
    // The request's work is done: a lock Redis could not release lapses after its TTL instead.
    await this.locker.release(this.id, this.token).catch((err: unknown) => this.locker.warn('could not release an upload lock', this.id, err));
  }
}
