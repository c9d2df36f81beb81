import type { Request } from 'express';
import IORedis from 'ioredis';
import { UserRepository } from '../../shared/db/repositories/user.repository';
import { AppError } from '../../shared/errors';
import { newId } from '../../shared/ids';
import { ConcurrencyLimiter } from '../../services/gateway/auth/limiter';
import { PasswordHasher } from '../../services/gateway/auth/password.hasher';
import { PrincipalCache } from '../../services/gateway/auth/principal.cache';
import { PrincipalService } from '../../services/gateway/auth/principal.service';
import { TokenService } from '../../services/gateway/auth/token.service';
import { AdminGate } from '../../services/gateway/monitoring/dashboard.auth';
import type { AttemptLimit } from '../../services/gateway/auth/attempt.limit';
import { RateLimits } from '../../services/gateway/auth/rate.limits';
import { createLogger } from '../../shared/logger';
import { createTestEnv, JWT_SECRET, type TestEnv } from '../support/harness';

/** The dashboard's admin gate: Basic checks are cached, limited, and never skip Argon2 on a miss. */
class CountingHasher extends PasswordHasher {
  verifies = 0;
  override async verify(storedHash: string | undefined, password: string): Promise<boolean> {
    this.verifies++;
    return super.verify(storedHash, password);
  }
}

const ADMIN = { username: 'gate-admin', password: 'gate-admin-password' };

let env: TestEnv;
let users: UserRepository;
let principals: PrincipalService;
let hasher: CountingHasher;
let clock: number;

const request = (authorization: string, ip = '203.0.113.7') => ({ headers: { authorization }, ip }) as unknown as Request;
const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
let limits: RateLimits;
const gate = (attempts?: AttemptLimit) => new AdminGate(principals, new TokenService(JWT_SECRET), hasher, { cacheTtlMs: 60_000, attempts, now: () => clock });

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
  return 'admitted';
}

beforeAll(async () => {
  env = await createTestEnv();
  limits = new RateLimits(env.config.redisUrl, env.config.queuePrefix, createLogger('gateway', 'silent'));
  users = new UserRepository(env.db);
  // The gate's lookups never use the cache; with a TTL of 0 it opens no Redis connection.
  principals = new PrincipalService(users, new PrincipalCache(0, env.config, env.config.queuePrefix, createLogger('gateway', 'silent')));
  hasher = new CountingHasher(new ConcurrencyLimiter(2, 10_000));
  await users.insert({
    id: newId(),
    username: ADMIN.username,
    email: null,
    passwordHash: await hasher.hash(ADMIN.password),
    isAdmin: true,
    createdAt: new Date(),
  });
});

afterAll(async () => {
  await limits.close();
  await env.dropAll();
});

beforeEach(() => {
  hasher.verifies = 0;
  clock = Date.now();
});

test('a second Basic request with the same credentials within the cache time costs no Argon2 run', async () => {
  const g = gate();
  await g.admit(request(basic(ADMIN.username, ADMIN.password)));
  await g.admit(request(basic(ADMIN.username, ADMIN.password)));
  await g.admit(request(basic(ADMIN.username, ADMIN.password)));
  expect(hasher.verifies).toBe(1);
});

test('once the cache time has passed, the password is verified again', async () => {
  const g = gate();
  await g.admit(request(basic(ADMIN.username, ADMIN.password)));
  clock += 61_000;
  await g.admit(request(basic(ADMIN.username, ADMIN.password)));
  expect(hasher.verifies).toBe(2);
});

test('a password change invalidates the cached check at once', async () => {
  const g = gate();
  const user = await users.findByUsername(ADMIN.username);
  await g.admit(request(basic(ADMIN.username, ADMIN.password)));
  await users.updatePasswordHash(user!.id, await hasher.hash('another-password-1'), new Date());
  try {
    expect(await refusal(g.admit(request(basic(ADMIN.username, ADMIN.password))))).toBe('UNAUTHORIZED');
    expect(hasher.verifies).toBe(2);
  } finally {
    await users.updatePasswordHash(user!.id, await hasher.hash(ADMIN.password), new Date());
  }
});

test('wrong passwords are never cached: each one runs Argon2, unknown users too', async () => {
  const g = gate();
  expect(await refusal(g.admit(request(basic(ADMIN.username, 'wrong-password'))))).toBe('UNAUTHORIZED');
  expect(await refusal(g.admit(request(basic(ADMIN.username, 'wrong-password'))))).toBe('UNAUTHORIZED');
  expect(await refusal(g.admit(request(basic('nobody-here', 'wrong-password'))))).toBe('UNAUTHORIZED');
  expect(hasher.verifies).toBe(3);
});

test('after too many failures from one address, further attempts get RATE_LIMITED without reaching Argon2, on every gateway', async () => {
  // Two gates over one Redis store: two gateways sharing the count.
  const first = gate(limits.attempts('admin-basic-test', 2));
  const second = gate(limits.attempts('admin-basic-test', 2));
  expect(await refusal(first.admit(request(basic(ADMIN.username, 'wrong-1'))))).toBe('UNAUTHORIZED');
  expect(await refusal(second.admit(request(basic(ADMIN.username, 'wrong-2'))))).toBe('UNAUTHORIZED');
  expect(await refusal(first.admit(request(basic(ADMIN.username, 'wrong-3'))))).toBe('RATE_LIMITED');
  expect(await refusal(second.admit(request(basic(ADMIN.username, ADMIN.password))))).toBe('RATE_LIMITED');
  expect(hasher.verifies).toBe(2);
  // Another address is not affected.
  expect(await refusal(second.admit(request(basic(ADMIN.username, ADMIN.password), '198.51.100.1')))).toBe('admitted');
  // The count is in Redis, under the queue prefix, and expires with its window.
  const redis = new IORedis(env.config.redisUrl);
  try {
    const key = `${env.config.queuePrefix}:rl:admin-basic-test:203.0.113.7`;
    // Two failures and the two refused attempts.
    expect(Number(await redis.get(key))).toBe(4);
    expect(await redis.pttl(key)).toBeGreaterThan(0);
  } finally {
    redis.disconnect();
  }
});

test('a burst of parallel wrong guesses from one address runs at most the limit of Argon2 checks; the rest are refused', async () => {
  const g = gate(limits.attempts('admin-basic-burst', 3));
  const outcomes = await Promise.all(Array.from({ length: 40 }, (_, i) => refusal(g.admit(request(basic(ADMIN.username, `guess-${i}`), '203.0.113.40')))));
  expect(hasher.verifies).toBeLessThanOrEqual(3);
  expect(outcomes.filter((o) => o === 'UNAUTHORIZED').length).toBeLessThanOrEqual(3);
  expect(outcomes.filter((o) => o === 'RATE_LIMITED').length).toBeGreaterThanOrEqual(37);
});

test('a right password gives its attempt back: only failures use up the limit', async () => {
  const g = gate(limits.attempts('admin-basic-success', 2));
  const ip = '203.0.113.41';
  for (let i = 0; i < 4; i++) {
    clock += 120_000; // past the cache time, so each one runs Argon2 again
    expect(await refusal(g.admit(request(basic(ADMIN.username, ADMIN.password), ip)))).toBe('admitted');
  }
  expect(await refusal(g.admit(request(basic(ADMIN.username, 'wrong-1'), ip)))).toBe('UNAUTHORIZED');
  expect(await refusal(g.admit(request(basic(ADMIN.username, 'wrong-2'), ip)))).toBe('UNAUTHORIZED');
  expect(await refusal(g.admit(request(basic(ADMIN.username, 'wrong-3'), ip)))).toBe('RATE_LIMITED');
});

test('with the failure store unreachable, Basic checks still work and still run Argon2 (fails open, bounded by the limiter)', async () => {
  const unreachable = new RateLimits('redis://127.0.0.1:1', env.config.queuePrefix, createLogger('gateway', 'silent'));
  try {
    const g = gate(unreachable.attempts('admin-basic-down', 1));
    expect(await refusal(g.admit(request(basic(ADMIN.username, 'wrong-1'))))).toBe('UNAUTHORIZED');
    expect(await refusal(g.admit(request(basic(ADMIN.username, 'wrong-2'))))).toBe('UNAUTHORIZED');
    expect(await refusal(g.admit(request(basic(ADMIN.username, ADMIN.password))))).toBe('admitted');
    expect(hasher.verifies).toBe(3);
  } finally {
    await unreachable.close();
  }
});

test('when the Argon2 limiter is saturated, a Basic check waits its turn and then gives up with SERVICE_UNAVAILABLE', async () => {
  const limiter = new ConcurrencyLimiter(1, 20);
  const g = new AdminGate(principals, new TokenService(JWT_SECRET), new CountingHasher(limiter), { cacheTtlMs: 60_000 });
  // Work holding the only slot, as a sign-in would through the same limiter.
  let release!: () => void;
  const holder = limiter.run(() => new Promise<void>((resolve) => (release = resolve)));
  try {
    expect(await refusal(g.admit(request(basic(ADMIN.username, ADMIN.password))))).toBe('SERVICE_UNAVAILABLE');
  } finally {
    release();
    await holder;
  }
  expect(await refusal(g.admit(request(basic(ADMIN.username, ADMIN.password))))).toBe('admitted');
});
