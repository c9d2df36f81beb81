import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import type { Logger } from '../../../shared/logger';
import { redisOptions } from '../../../shared/redis/redis.connection';
import { DavError, LIMIT_CONDITION } from './dav.errors';
import { isWithin } from './dav.paths';
import { GRANT, LOOKUP, REFRESH, REMOVE } from './lock.scripts';
import type { XmlElement } from './dav.xml';

export type LockScope = 'exclusive' | 'shared';
export type LockDepth = '0' | 'infinity';

/** A write lock (RFC 4918 section 6) on a path of one user's tree. */
export interface DavLock {
  token: string;
  /** The lock root's path key (dav.paths.ts). */
  path: string;
  /** The lock root's href, as answered in lockroot. */
  href: string;
  /** The resource the lock was taken on, when one was there; see DavRequest.lookupLocks. */
  resourceId?: string;
  depth: LockDepth;
  scope: LockScope;
  owner: XmlElement | null;
  timeoutSeconds: number;
  /** Epoch ms. */
  expiresAt: number;
}

/**
 * A lock token: 120 random bits as an opaquelocktoken URI of 36 characters. Short on purpose: clients
 * put a token and two 66-character ETags in one If header, and some (neon, so litmus, davfs2) cut
 * that header at 200 bytes.
 */
const newLockToken = (): string => `opaquelocktoken:${randomBytes(15).toString('base64url')}`;

/** Longest lock timeout granted; `Infinite` gets this too (RFC 4918 10.7 lets the server choose). */
export const MAX_LOCK_SECONDS = 7 * 24 * 3600;
export const DEFAULT_LOCK_SECONDS = 3600;

/** Most active locks rooted at one resource. */
export const MAX_LOCKS_PER_RESOURCE = 100;
/** Most active locks of one user. */
export const MAX_LOCKS_PER_USER = 10_000;

/** Which locks a lookup asks for; each path is a path key (dav.paths.ts). */
export interface LockQuery {
  /** The locks covering each of these paths: rooted there, or above with depth infinity. */
  covering?: string[];
  /** The locks rooted at each of these paths. */
  rootedAt?: string[];
  /** The locks strictly below each of these paths. */
  below?: string[];
}

type Script = (...args: unknown[]) => Promise<unknown>;

/**
 * Locks live in Redis (lock.scripts.ts): per user a hash of the locks by token, an index of their
 * expiries and, per scope, an index of their paths, so every gateway sees the same locks and a
 * request reads only the locks of the paths it touches. The keys share the user's hash tag, and
 * expire after the longest lock.
 */
export class DavLockStore {
  private readonly redis: IORedis;

  constructor(
    redisUrl: string,
    private readonly prefix: string,
    logger: Logger,
  ) {
    this.redis = new IORedis({ ...redisOptions(redisUrl, 'producer'), connectionName: `${prefix}-dav-locks` });
    this.redis.on('error', (err) => logger.debug({ err: err.message }, 'redis dav lock connection error'));
    this.redis.defineCommand('davLockLookup', { numberOfKeys: 4, lua: LOOKUP });
    this.redis.defineCommand('davLockGrant', { numberOfKeys: 4, lua: GRANT });
    this.redis.defineCommand('davLockRefresh', { numberOfKeys: 4, lua: REFRESH });
    this.redis.defineCommand('davLockRemove', { numberOfKeys: 4, lua: REMOVE });
  }

  private keys(userId: string): string[] {
    const base = `${this.prefix}:dav:{${userId}}`;
    return [`${base}:locks`, `${base}:expiries`, `${base}:exclusive`, `${base}:shared`];
  }

  private script(name: string): Script {
    return (this.redis as unknown as Record<string, Script>)[name]!.bind(this.redis);
  }

  /** The user's active locks that the query names. */
  async lookup(userId: string, query: LockQuery): Promise<DavLock[]> {
    const args: string[] = [];
    for (const p of query.covering ?? []) args.push('c', p);
    for (const p of query.rootedAt ?? []) args.push('r', p);
    for (const p of query.below ?? []) args.push('w', p);
    if (args.length === 0) return [];
    const found = (await this.call(() => this.script('davLockLookup')(...this.keys(userId), Date.now(), ...args))) as string[];
    return found.map((v) => JSON.parse(v) as DavLock);
  }

  /**
   * Grants a new lock; 423 with no-conflicting-lock naming the lock in the way, 507 when the
   * resource or the user already holds as many locks as allowed.
   */
  async grant(userId: string, lock: Omit<DavLock, 'token' | 'expiresAt'>): Promise<DavLock> {
    const now = Date.now();
    const granted: DavLock = { ...lock, token: newLockToken(), expiresAt: now + lock.timeoutSeconds * 1000 };
    const [outcome, conflict] = (await this.call(() =>
      this.script('davLockGrant')(
        ...this.keys(userId),
        now,
        granted.token,
        lock.path,
        lock.depth,
        lock.scope,
        JSON.stringify(granted),
        granted.expiresAt,
        MAX_LOCKS_PER_RESOURCE,
        MAX_LOCKS_PER_USER,
        MAX_LOCK_SECONDS * 1000,
      ),
    )) as [string, string?];
    if (outcome === 'conflict') throw new DavError(423, 'the resource is locked', 'no-conflicting-lock', [(JSON.parse(conflict!) as DavLock).href]);
    if (outcome === 'resource-limit') throw new DavError(507, `a resource holds at most ${MAX_LOCKS_PER_RESOURCE} locks`, LIMIT_CONDITION);
    if (outcome === 'user-limit') throw new DavError(507, `a user holds at most ${MAX_LOCKS_PER_USER} locks`, LIMIT_CONDITION);
    return granted;
  }

  /** Restarts a lock's timeout; undefined when it is no longer active. */
  async refresh(userId: string, lock: DavLock, timeoutSeconds: number): Promise<DavLock | undefined> {
    const now = Date.now();
    const refreshed = { ...lock, timeoutSeconds, expiresAt: now + timeoutSeconds * 1000 };
    const done = await this.call(() =>
      this.script('davLockRefresh')(...this.keys(userId), now, lock.token, JSON.stringify(refreshed), refreshed.expiresAt, MAX_LOCK_SECONDS * 1000),
    );
    return done === 1 ? refreshed : undefined;
  }

  async remove(userId: string, token: string): Promise<boolean> {
    return ((await this.call(() => this.script('davLockRemove')(...this.keys(userId), Date.now(), 't', token))) as number) > 0;
  }

  /** Removes the locks rooted at `path` or below it (the resource was deleted or moved away). */
  async removeWithin(userId: string, path: string): Promise<void> {
    await this.call(() => this.script('davLockRemove')(...this.keys(userId), Date.now(), 'w', path));
  }

  close(): void {
    this.redis.disconnect();
  }

  private async call<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch {
      throw new DavError(503, 'the lock store is unavailable', undefined, [], 2);
    }
  }
}

/** The active locks that cover `path`: rooted there, or above it with depth infinity. */
export function locksCovering(locks: DavLock[], path: string): DavLock[] {
  return locks.filter((l) => l.path === path || (l.depth === 'infinity' && isWithin(path, l.path)));
}

/** Parses a Timeout header (RFC 4918 10.7): the first value we understand, capped. */
export function lockTimeout(header: string | undefined): number {
  if (!header) return DEFAULT_LOCK_SECONDS;
  for (const part of header.split(',')) {
    const value = part.trim();
    if (/^infinite$/i.test(value)) return MAX_LOCK_SECONDS;
    const m = /^second-(\d+)$/i.exec(value);
    if (m) return Math.max(1, Math.min(Number(m[1]), MAX_LOCK_SECONDS));
  }
  return DEFAULT_LOCK_SECONDS;
}
