import { ERRORS } from '@tus/server';
import { randomBytes } from 'node:crypto';
import { newId } from '../../shared/ids';
import { createLogger } from '../../shared/logger';
import { RedisLocker, type RedisLockerOptions } from '../../services/gateway/uploads/redis.locker';
import { deleteQueueKeys } from '../support/harness';
import { RedisServer } from '../support/redis.server';

const prefix = `fs_test_${randomBytes(5).toString('hex')}`;
const lockers: RedisLocker[] = [];

/** One locker per simulated gateway process, all on the shared Redis under this file's prefix. */
async function gatewayLocker(options: Partial<RedisLockerOptions> = {}): Promise<RedisLocker> {
  const locker = new RedisLocker({ redis: 'redis://127.0.0.1:6379', prefix, ...options }, createLogger('gateway', 'silent'));
  lockers.push(locker);
  await locker.ready();
  return locker;
}

const signal = () => new AbortController().signal;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterAll(async () => {
  await Promise.all(lockers.map((l) => l.close()));
  await deleteQueueKeys(prefix);
});

test('a lock held on one gateway keeps another gateway waiting until it is released', async () => {
  const a = await gatewayLocker();
  const b = await gatewayLocker({ acquireTimeoutMs: 300 });
  const id = newId();
  const held = a.newLock(id);
  await held.lock(signal(), () => undefined);
  await expect(b.newLock(id).lock(signal(), () => undefined)).rejects.toBe(ERRORS.ERR_LOCK_TIMEOUT);
  await held.unlock();
  const next = b.newLock(id);
  await next.lock(signal(), () => undefined);
  await next.unlock();
});

test('a request waiting for a lock asks the holder on the other gateway to let go, and then gets it', async () => {
  const a = await gatewayLocker();
  const b = await gatewayLocker({ acquireTimeoutMs: 5000 });
  const id = newId();
  const held = a.newLock(id);
  let asked = 0;
  await held.lock(signal(), async () => {
    asked++;
    await held.unlock();
  });
  const waiting = b.newLock(id);
  await waiting.lock(signal(), () => undefined);
  expect(asked).toBe(1);
  await waiting.unlock();
});

test('a held lock is renewed past its TTL; a lock whose holder died lapses after it', async () => {
  const a = await gatewayLocker({ ttlMs: 600 });
  const b = await gatewayLocker({ acquireTimeoutMs: 200, ttlMs: 600 });
  const id = newId();
  const held = a.newLock(id);
  await held.lock(signal(), () => undefined);
  await sleep(1500);
  await expect(b.newLock(id).lock(signal(), () => undefined)).rejects.toBe(ERRORS.ERR_LOCK_TIMEOUT);
  // The holder's process goes away without unlocking: nothing renews the key any more.
  await a.close();
  const patient = await gatewayLocker({ acquireTimeoutMs: 5000, ttlMs: 600 });
  const taken = patient.newLock(id);
  await taken.lock(signal(), () => undefined);
  await taken.unlock();
});

test('releasing a lock that lapsed and was taken by another holder leaves the new holder’s lock alone', async () => {
  const a = await gatewayLocker({ ttlMs: 300 });
  const b = await gatewayLocker({ acquireTimeoutMs: 5000, ttlMs: 5000 });
  const c = await gatewayLocker({ acquireTimeoutMs: 200 });
  const id = newId();
  const stale = a.newLock(id);
  await stale.lock(signal(), () => undefined);
  await a.close();
  const fresh = b.newLock(id);
  await fresh.lock(signal(), () => undefined);
  await stale.unlock().catch(() => undefined);
  await expect(c.newLock(id).lock(signal(), () => undefined)).rejects.toBe(ERRORS.ERR_LOCK_TIMEOUT);
  await fresh.unlock();
});

test('while Redis is away a lock is refused with 503 and Retry-After, and a held lock is let go without an error', async () => {
  const redis = await RedisServer.start();
  const locker = new RedisLocker({ redis: redis.url, prefix, acquireTimeoutMs: 1000 }, createLogger('gateway', 'silent'));
  try {
    await locker.ready();
    const held = locker.newLock(newId());
    await held.lock(signal(), () => undefined);

    await redis.kill();

    await expect(locker.newLock(newId()).lock(signal(), () => undefined)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', status: 503, retryAfter: 2 });
    await expect(held.unlock()).resolves.toBeUndefined();
  } finally {
    await locker.close();
    await redis.stop();
  }
});
