import type { Logger } from '../logger';
import type { ChangeNotifier } from '../db/owner.transaction';
import { connectRedis, type RedisConnection, type RedisTarget } from '../redis/redis.connection';

/**
 * The doorbell of the change feed: after a commit that changed a user's tree, the writer (a worker or
 * a gateway) publishes the user id here, and every gateway wakes the feed requests it holds for that
 * user. The message carries nothing else: the feed itself is always read from MySQL, so a lost message
 * only delays an answer until the request's `wait` runs out.
 */
export function changeChannel(prefix: string): string {
  return `${prefix}:changes`;
}

export class RedisChangeNotifier implements ChangeNotifier {
  private readonly redis: RedisConnection;
  private readonly channel: string;

  constructor(redis: RedisTarget, prefix: string, private readonly logger: Logger) {
    // Unlike a queue producer, a notification may wait for the connection: during start-up, a slow
    // connect or a short reconnect it is queued rather than lost (and dropped after a few attempts
    // while Redis stays away).
    this.redis = connectRedis(redis, 'producer', { enableOfflineQueue: true, maxRetriesPerRequest: 5 });
    this.redis.on('error', (err) => logger.debug({ err: err.message }, 'redis change publisher connection error'));
    this.channel = changeChannel(prefix);
  }

  /** Resolves once the connection answers. */
  async ready(): Promise<void> {
    await this.redis.ping();
  }

  changed(userId: string): void {
    this.redis.publish(this.channel, userId).catch((err: Error) => {
      // Held requests still answer when their wait runs out; nothing is lost.
      this.logger.warn({ err: err.message }, 'could not publish a change notification');
    });
  }

  close(): void {
    this.redis.disconnect();
  }
}
