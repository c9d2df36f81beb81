import { DeviceRepository } from '../../shared/db/repositories/device.repository';
import { UserRepository } from '../../shared/db/repositories/user.repository';
import { newId } from '../../shared/ids';
import { createLogger } from '../../shared/logger';
import { PrincipalCache } from '../../services/gateway/auth/principal.cache';
import { PrincipalService } from '../../services/gateway/auth/principal.service';
import { createTestEnv, type TestEnv } from '../support/harness';

/*
 * Two gateways' principal caches over one Redis. A lookup on the second reads the device's row, the
 * device is revoked on the first (committed, then published) before that lookup finishes: what the
 * lookup read must not be cached, or the revoked device would pass there for AUTH_CACHE_MS.
 */
let env: TestEnv;
let one: PrincipalCache;
let two: PrincipalCache;

beforeAll(async () => {
  env = await createTestEnv({ AUTH_CACHE_MS: '60000' });
  const logger = createLogger('gateway', 'silent');
  one = new PrincipalCache(60_000, env.config, env.config.queuePrefix, logger);
  two = new PrincipalCache(60_000, env.config, env.config.queuePrefix, logger);
  await Promise.all([one.ready(), two.ready()]);
});

afterAll(async () => {
  one?.close();
  two?.close();
  await env?.dropAll();
});

test('a lookup that read the row before a revocation does not cache it after', async () => {
  const users = new UserRepository(env.db);
  const userId = newId();
  const deviceId = newId();
  const now = new Date();
  await users.insert({ id: userId, username: 'generation', email: null, passwordHash: 'x', isAdmin: false, createdAt: now });
  await new DeviceRepository(env.db).insert({ id: deviceId, name: 'laptop', platform: null, userId, kind: 'client', createdAt: now });

  // The second gateway's lookup reads the row, then stalls until the revocation has reached it.
  let readDone!: () => void;
  const read = new Promise<void>((resolve) => (readDone = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const slowUsers = Object.create(users) as UserRepository;
  slowUsers.findPrincipal = async (u, d) => {
    const row = await users.findPrincipal(u, d);
    readDone();
    await released;
    return row;
  };
  const lookup = new PrincipalService(slowUsers, two).current(userId, deviceId);
  await read;

  await env.db('devices').where({ id: deviceId }).update({ deleted_at: new Date() });
  const generation = two.generation;
  await one.revoked(userId);
  // The message reaches the second gateway (its generation moves) before its lookup returns.
  for (let i = 0; i < 200 && two.generation === generation; i++) await new Promise((r) => setTimeout(r, 10));
  expect(two.generation).not.toBe(generation);
  release();
  expect(await lookup).toBeDefined(); // what it read, from before the revocation

  expect(two.get(userId, deviceId)).toBeUndefined();
  expect(await new PrincipalService(users, two).current(userId, deviceId)).toBeUndefined();
});
