import { AppError, unavailable } from '../../../shared/errors';
import type { ChangeNotifier } from '../../../shared/db/owner.transaction';
import type { Logger } from '../../../shared/logger';
import { changeChannel, RedisChangeNotifier } from '../../../shared/queue/change.channel';
import { connectRedis, type RedisConnection, type RedisTarget } from '../../../shared/redis/redis.connection';

export type WaitOutcome = 'changed' | 'timeout' | 'closing';

export interface HeldRequest {
  /** Settles once: a change of the user committed, the time ran out, or the gateway is closing. */
  readonly settled: Promise<WaitOutcome>;
  /** Lets go of the request early (answered, or the client went away). */
  release(): void;
  /**
   * The owner's feed position the request has read up to, read before its feed: once the owner's
   * position passes it, the recheck wakes the request even if no notification came.
   */
  watchFrom(position: number): void;
}

/** The owners' last feed positions (users.change_seq), read for the recheck. */
export type FeedPositions = (userIds: readonly string[]) => Promise<Map<string, number>>;

export interface HubRecheck {
  positions: FeedPositions;
  everyMs: number;
}

export interface HubLimits {
  /** Requests held at once by this gateway. */
  maxHeld: number;
  /** Requests held at once for one user by this gateway. */
  maxPerUser: number;
}

interface Waiter {
  settle(outcome: WaitOutcome): void;
  /** Set by watchFrom; until then the recheck leaves the request alone. */
  since?: number;
}

/** How often held owners' positions are read: the longest a lost notification delays an answer. */
export const FEED_RECHECK_MS = 2000;

/** Owners asked about in one query of the recheck. */
const RECHECK_CHUNK = 500;

/**
 * Holds change-feed requests until their user's tree changes. One Redis subscription per gateway,
 * whatever the number of held requests; a held request costs a timer and a closure, and no database
 * work until it is woken. Writers anywhere publish after commit (see change.channel.ts); writes made by
 * this gateway also wake its own requests directly, without the round trip through Redis.
 *
 * Pub/sub delivers at most once: a message published while the subscription is being re-established
 * (a reconnect, a cluster failover) is gone. So every `everyMs` the hub also reads the positions of
 * the owners it holds requests for, one query per 500 owners, and wakes the requests whose owner has
 * moved on: a lost notification delays an answer by that much, never by the request's whole wait.
 */
export class ChangeHub implements ChangeNotifier {
  private readonly subscriber: RedisConnection;
  private readonly publisher: RedisChangeNotifier;
  private readonly channel: string;
  private readonly waiters = new Map<string, Set<Waiter>>();
  private count = 0;
  private closing = false;
  private readonly rechecking?: NodeJS.Timeout;
  private recheckRunning = false;

  constructor(
    redis: RedisTarget,
    prefix: string,
    private readonly limits: HubLimits,
    private readonly logger: Logger,
    recheck?: HubRecheck,
  ) {
    this.channel = changeChannel(prefix);
    this.publisher = new RedisChangeNotifier(redis, prefix, logger);
    this.subscriber = connectRedis(redis, 'blocking', { connectionName: `${prefix}-change-feed` });
    this.subscriber.on('error', (err) => logger.debug({ err: err.message }, 'redis change subscriber connection error'));
    this.subscriber.on('message', (_channel: string, userId: string) => this.wake(userId));
    // Messages published while the subscription was down are lost: after a reconnect every held
    // request reads the feed once more rather than wait out its time.
    let connected = false;
    this.subscriber.on('ready', () => {
      if (connected) this.wakeAll();
      connected = true;
    });
    // On a cluster the subscription moves to another node when its node fails: the same applies.
    this.subscriber.on('-node', () => this.wakeAll());
    if (recheck) this.rechecking = setInterval(() => void this.recheckPositions(recheck.positions), recheck.everyMs).unref();
  }

  /** Resolves once the subscription is in place and the publisher answers. */
  async ready(): Promise<void> {
    await Promise.all([this.subscriber.subscribe(this.channel), this.publisher.ready()]);
  }

  get held(): number {
    return this.count;
  }

  changed(userId: string): void {
    this.wake(userId);
    this.publisher.changed(userId);
  }

  /** Holds a request of `userId` for at most `ms`; refuses one over the gateway's or the user's bound. */
  hold(userId: string, ms: number): HeldRequest {
    if (this.closing) throw unavailable('the service is shutting down', 1);
    if (this.count >= this.limits.maxHeld) throw unavailable('too many change-feed requests are held; retry shortly', 2);
    const own = this.waiters.get(userId) ?? new Set<Waiter>();
    if (own.size >= this.limits.maxPerUser) {
      throw new AppError('RATE_LIMITED', `at most ${this.limits.maxPerUser} change-feed requests of one user may wait at once`, { retryAfter: 1 });
    }
    this.waiters.set(userId, own);
    this.count++;
    let timer: NodeJS.Timeout | undefined;
    let waiter!: Waiter;
    const settled = new Promise<WaitOutcome>((resolve) => {
      waiter = {
        settle: (outcome) => {
          if (!own.delete(waiter)) return;
          this.count--;
          if (own.size === 0 && this.waiters.get(userId) === own) this.waiters.delete(userId);
          clearTimeout(timer);
          resolve(outcome);
        },
      };
    });
    own.add(waiter);
    timer = setTimeout(() => waiter.settle('timeout'), ms);
    return {
      settled,
      release: () => waiter.settle('timeout'),
      watchFrom: (position) => {
        waiter.since = position;
      },
    };
  }

  /** Wakes the held requests whose owner's position passed the one they read up to. */
  private async recheckPositions(positions: FeedPositions): Promise<void> {
    if (this.recheckRunning || this.count === 0) return;
    this.recheckRunning = true;
    try {
      const owners = [...this.waiters.keys()];
      for (let i = 0; i < owners.length; i += RECHECK_CHUNK) {
        const now = await positions(owners.slice(i, i + RECHECK_CHUNK));
        for (const [userId, position] of now) {
          for (const waiter of [...(this.waiters.get(userId) ?? [])]) {
            if (waiter.since !== undefined && position > waiter.since) waiter.settle('changed');
          }
        }
      }
    } catch (err) {
      // The notifications still work, and the next recheck tries again.
      this.logger.warn({ err: (err as Error).message }, 'change feed: could not recheck the held owners');
    } finally {
      this.recheckRunning = false;
    }
  }

  private wake(userId: string): void {
    const own = this.waiters.get(userId);
    if (!own) return;
    for (const waiter of [...own]) waiter.settle('changed');
  }

  private wakeAll(outcome: WaitOutcome = 'changed'): void {
    for (const own of [...this.waiters.values()]) for (const waiter of [...own]) waiter.settle(outcome);
  }

  /** Answers every held request at once, so a shutdown does not wait for their timeouts. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.rechecking);
    this.wakeAll('closing');
    this.subscriber.disconnect();
    this.publisher.close();
    this.logger.debug('change hub closed');
  }
}
