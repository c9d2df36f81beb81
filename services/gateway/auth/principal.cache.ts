import { LRUCache } from 'lru-cache';
import type { Principal } from '../../../shared/db/repositories/user.repository';
import type { Logger } from '../../../shared/logger';
import { connectRedis, type RedisConnection, type RedisTarget } from '../../../shared/redis/redis.connection';

/** Entries kept at most; the least recently used go first. */
const MAX_ENTRIES = 50_000;

/**
 * Principals (user and device of a verified token) found to exist in the last `ttlMs`, so that a
 * client's requests in quick succession cost one lookup instead of one each. The token itself is
 * still verified on every request; only the check that its user and device still exist is reused.
 *
 * A revocation (an account deleted) must not wait for the TTL: the gateway that makes it forgets the
 * user at once and publishes the user id on `<prefix>:principals`, and every gateway forgets it on
 * receipt. While that subscription is down, messages could be missed, so the cache is bypassed
 * entirely, and it starts empty again whenever the subscription comes back. With `ttlMs` 0 there is
 * no cache and no Redis connection.
 *
 * A lookup that read its row just before a revocation must not cache it just after: every forgetting
 * bumps a generation, a lookup takes the generation before it reads (`generation`), and `remember`
 * drops what was read under an older one.
 */
export class PrincipalCache {
  private readonly entries: LRUCache<string, Principal>;
  private currentGeneration = 0;
  private readonly subscriber?: RedisConnection;
  private readonly publisher?: RedisConnection;
  private readonly channel: string;
  private listening = false;
  private readonly waiting: Array<() => void> = [];

  constructor(
    ttlMs: number,
    redis: RedisTarget,
    prefix: string,
    private readonly logger: Logger,
  ) {
    this.channel = `${prefix}:principals`;
    this.entries = new LRUCache<string, Principal>({ max: MAX_ENTRIES, ttl: Math.max(1, ttlMs) });
    if (ttlMs <= 0) return;
    this.subscriber = connectRedis(redis, 'blocking', { connectionName: `${prefix}-principals` });
    this.publisher = connectRedis(redis, 'producer');
    for (const conn of [this.subscriber, this.publisher]) {
      conn.on('error', (err) => logger.debug({ err: err.message }, 'redis principal cache connection error'));
    }
    this.subscriber.on('message', (_channel: string, userId: string) => this.forget(userId));
    // At every (re)connection: subscribe (again; a repeat is harmless), start from nothing, and use
    // the cache only once the subscription is confirmed.
    this.subscriber.on('ready', () => {
      this.clear();
      this.subscriber!.subscribe(this.channel).then(
        () => this.listen(true),
        (err: Error) => logger.warn({ err: err.message }, 'principal cache: could not subscribe'),
      );
    });
    this.subscriber.on('close', () => this.listen(false));
    // On a cluster the subscription moves to another node when its node fails, and messages sent
    // meanwhile are lost: what was remembered before is dropped.
    this.subscriber.on('-node', () => this.clear());
  }

  /** The cached principal of that user and device, if it was seen to exist within the TTL. */
  get(userId: string, deviceId: string): Principal | undefined {
    return this.getByKey(`${userId}:${deviceId}`);
  }

  /**
   * A principal cached under a key of the caller's choosing (an app password's keyed hash), if seen
   * within the TTL. Such entries are forgotten with their user like the others.
   */
  getByKey(key: string): Principal | undefined {
    if (!this.listening) return undefined;
    return this.entries.get(key);
  }

  /** Taken before a lookup reads MySQL, and handed to `remember` with what it read. */
  get generation(): number {
    return this.currentGeneration;
  }

  /**
   * Remembers a principal read from MySQL by a lookup that started under `generation`; nothing when
   * something was forgotten (revoked) since, as the row may predate the revocation.
   */
  remember(principal: Principal, generation: number, key = `${principal.userId}:${principal.deviceId}`): void {
    if (!this.listening || generation !== this.currentGeneration) return;
    this.entries.set(key, principal);
  }

  /**
   * After a user's account was deleted, or one of their devices or app passwords revoked (committed):
   * the user's entries are forgotten here at once (and the generation bumped) before the message that
   * makes every gateway forget them.
   */
  async revoked(userId: string): Promise<void> {
    this.forget(userId);
    if (!this.publisher) return;
    await this.publisher.publish(this.channel, userId).catch((err: Error) => {
      // Other gateways bypass their cache while their own subscription is down; if only this
      // publish failed, theirs forgets the user within the TTL.
      this.logger.warn({ err: err.message, userId }, 'principal cache: could not publish a revocation');
    });
  }

  private forget(userId: string): void {
    this.currentGeneration++;
    const keys = [...this.entries.entries()].filter(([, principal]) => principal.userId === userId).map(([key]) => key);
    for (const key of keys) this.entries.delete(key);
  }

  private clear(): void {
    this.currentGeneration++;
    this.entries.clear();
  }

  private listen(on: boolean): void {
    this.listening = on;
    this.clear();
    if (on) for (const resolve of this.waiting.splice(0)) resolve();
  }

  /** Resolves once the subscription is up (at once without a cache). */
  async ready(): Promise<void> {
    if (!this.subscriber || this.listening) return;
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  close(): void {
    this.subscriber?.disconnect();
    this.publisher?.disconnect();
  }
}
