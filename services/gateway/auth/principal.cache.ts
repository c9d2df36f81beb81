import type { Principal } from '../../../shared/db/repositories/user.repository';
import type { Logger } from '../../../shared/logger';
import { connectRedis, type RedisConnection, type RedisTarget } from '../../../shared/redis/redis.connection';

/** Entries kept at most; the oldest go first. */
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
 */
export class PrincipalCache {
  private readonly entries = new Map<string, { principal: Principal; until: number }>();
  private readonly subscriber?: RedisConnection;
  private readonly publisher?: RedisConnection;
  private readonly channel: string;
  private listening = false;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly ttlMs: number,
    redis: RedisTarget,
    prefix: string,
    private readonly logger: Logger,
  ) {
    this.channel = `${prefix}:principals`;
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
      this.entries.clear();
      this.subscriber!.subscribe(this.channel).then(
        () => this.listen(true),
        (err: Error) => logger.warn({ err: err.message }, 'principal cache: could not subscribe'),
      );
    });
    this.subscriber.on('close', () => this.listen(false));
    // On a cluster the subscription moves to another node when its node fails, and messages sent
    // meanwhile are lost: what was remembered before is dropped.
    this.subscriber.on('-node', () => this.entries.clear());
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
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.until > Date.now()) return hit.principal;
    this.entries.delete(key);
    return undefined;
  }

  /** Remembers a principal just read from MySQL. */
  remember(principal: Principal, key = `${principal.userId}:${principal.deviceId}`): void {
    if (!this.listening) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { principal, until: Date.now() + this.ttlMs });
  }

  /**
   * After a user's account was deleted or one of their app passwords revoked (committed): the user's
   * entries are forgotten here at once, and on every gateway by message.
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
    for (const [key, entry] of this.entries) if (entry.principal.userId === userId) this.entries.delete(key);
  }

  private listen(on: boolean): void {
    this.listening = on;
    this.entries.clear();
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
