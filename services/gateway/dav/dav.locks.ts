import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import type { Logger } from '../../../shared/logger';
import { redisOptions } from '../../../shared/redis/redis.connection';
import { DavError } from './dav.errors';
import { isWithin } from './dav.paths';
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

/**
 * Grants the lock unless an active one conflicts (RFC 4918 6.1: an exclusive lock conflicts with
 * any other on an overlapping path, shared locks with exclusive ones only), in one script so two
 * gateways cannot both grant. Drops expired locks on the way. Returns the conflicting lock, or nil.
 */
const GRANT = `
local all = redis.call('HGETALL', KEYS[1])
local now = tonumber(ARGV[1])
local path, depth, scope = ARGV[3], ARGV[4], ARGV[5]
for i = 1, #all, 2 do
  local l = cjson.decode(all[i + 1])
  if l.expiresAt <= now then
    redis.call('HDEL', KEYS[1], all[i])
  elseif l.scope == 'exclusive' or scope == 'exclusive' then
    local p = l.path
    if p == path
      or (l.depth == 'infinity' and string.sub(path, 1, #p + 1) == p .. '/')
      or (depth == 'infinity' and string.sub(p, 1, #path + 1) == path .. '/') then
      return all[i + 1]
    end
  end
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[6])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[7]) then redis.call('PEXPIRE', KEYS[1], ARGV[7]) end
return false
`;

/**
 * Locks live in Redis, one hash per user (`<prefix>:dav:locks:<userId>`, token -> lock), so every
 * gateway sees the same locks; the hash expires after its longest lock. A request that writes reads
 * the user's locks once (HGETALL).
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
    this.redis.defineCommand('davGrantLock', { numberOfKeys: 1, lua: GRANT });
  }

  private key(userId: string): string {
    return `${this.prefix}:dav:locks:${userId}`;
  }

  /** The user's active locks. */
  async list(userId: string): Promise<DavLock[]> {
    const all = await this.call(() => this.redis.hgetall(this.key(userId)));
    const now = Date.now();
    return Object.values(all)
      .map((v) => JSON.parse(v) as DavLock)
      .filter((l) => l.expiresAt > now);
  }

  /** Grants a new lock, or throws 423 with no-conflicting-lock naming the lock in the way. */
  async grant(userId: string, lock: Omit<DavLock, 'token' | 'expiresAt'>): Promise<DavLock> {
    const granted: DavLock = { ...lock, token: newLockToken(), expiresAt: Date.now() + lock.timeoutSeconds * 1000 };
    const conflict = (await this.call(() =>
      (this.redis as unknown as { davGrantLock: (...args: unknown[]) => Promise<string | null> }).davGrantLock(
        this.key(userId),
        Date.now(),
        granted.token,
        lock.path,
        lock.depth,
        lock.scope,
        JSON.stringify(granted),
        MAX_LOCK_SECONDS * 1000,
      ),
    )) as string | null;
    if (conflict) throw new DavError(423, 'the resource is locked', 'no-conflicting-lock', [(JSON.parse(conflict) as DavLock).href]);
    return granted;
  }

  /** Restarts a lock's timeout; undefined when the token names no active lock of the user. */
  async refresh(userId: string, token: string, timeoutSeconds: number): Promise<DavLock | undefined> {
    const raw = await this.call(() => this.redis.hget(this.key(userId), token));
    if (!raw) return undefined;
    const lock = JSON.parse(raw) as DavLock;
    if (lock.expiresAt <= Date.now()) return undefined;
    const refreshed = { ...lock, timeoutSeconds, expiresAt: Date.now() + timeoutSeconds * 1000 };
    await this.call(() => this.redis.hset(this.key(userId), token, JSON.stringify(refreshed)));
    await this.call(() => this.redis.pexpire(this.key(userId), MAX_LOCK_SECONDS * 1000));
    return refreshed;
  }

  async remove(userId: string, token: string): Promise<boolean> {
    return (await this.call(() => this.redis.hdel(this.key(userId), token))) > 0;
  }

  /** Removes the locks rooted at `path` or below it (the resource was deleted or moved away). */
  async removeWithin(userId: string, path: string): Promise<void> {
    const tokens = (await this.list(userId)).filter((l) => isWithin(l.path, path)).map((l) => l.token);
    if (tokens.length > 0) await this.call(() => this.redis.hdel(this.key(userId), ...tokens));
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
