import express from 'express';
import type { AddressInfo } from 'node:net';
import IORedis from 'ioredis';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../shared/logger';
import { clientAddress, RateLimits } from '../../services/gateway/auth/rate.limits';
import { errorHandler } from '../../services/gateway/http/errors.middleware';
import { createHttpServer, listen } from '../../services/gateway/http/http.server';
import { Api, type ApiResponse } from '../support/client';
import { expectError } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/**
 * Sign-in and registration limits live in Redis: two gateways share them, rotating usernames does not
 * dodge the per-address limit, and other clients are not locked out by a flood from one address.
 * The gateways trust the loopback proxy, so each test picks its client address with X-Forwarded-For.
 */
let env: TestEnv;
let one: RunningGateway;
let two: RunningGateway;
let deviceId: string;

const LIMITS = { LOGIN_RATE_LIMIT: '3', LOGIN_ADDRESS_RATE_LIMIT: '10', REGISTER_RATE_LIMIT: '5', TRUST_PROXY: 'loopback' };

beforeAll(async () => {
  env = await createTestEnv(LIMITS);
  [one, two] = await Promise.all([startGateway(env), startGateway(env)]);
  deviceId = await new Api(one.baseUrl).registerDevice('limits');
});

afterAll(async () => {
  await Promise.all([one?.close(), two?.close()]);
  await env?.dropAll();
});

let nextAddress = 1;
/** A client address of its own for each test, as a trusted proxy would report it. */
const address = () => `198.51.100.${nextAddress++}`;
const from = (gateway: RunningGateway, ip: string) => ({
  login: (username: string, password: string) =>
    new Api(gateway.baseUrl).request('POST', '/v1/auth/login', { json: { username, password, deviceId }, headers: { 'x-forwarded-for': ip } }),
  register: () => new Api(gateway.baseUrl).request('POST', '/v1/devices', { json: { name: 'd' }, headers: { 'x-forwarded-for': ip } }),
});

function expectLimited(res: ApiResponse) {
  expectError(res, 429, 'RATE_LIMITED');
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

const randomName = () => `u${randomBytes(6).toString('hex')}`;

test('the per-address-and-username limit is shared by two gateways', async () => {
  const ip = address();
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await from(i % 2 === 0 ? one : two, ip).login(ADMIN.username, 'wrong-password')).status);
  expect(statuses).toEqual([401, 401, 401]);
  // Each gateway alone has seen at most two attempts: only a shared count refuses the fourth.
  expectLimited(await from(two, ip).login(ADMIN.username, ADMIN.password));
  expectLimited(await from(one, ip).login(ADMIN.username, ADMIN.password));
  // The count is kept in Redis under the queue prefix.
  const redis = new IORedis(env.config.redisUrl);
  try {
    expect((await redis.keys(`${env.config.queuePrefix}:rl:login:*`)).length).toBeGreaterThan(0);
  } finally {
    redis.disconnect();
  }
});

/** Counts the Argon2 verifications both gateways run from now on. */
function countVerifications(): { readonly count: number; restore(): void } {
  let count = 0;
  const originals = [one, two].map((g) => {
    const original = g.hasher.verify.bind(g.hasher);
    g.hasher.verify = (hash, password) => {
      count++;
      return original(hash, password);
    };
    return () => (g.hasher.verify = original);
  });
  return {
    get count() {
      return count;
    },
    restore: () => originals.forEach((restore) => restore()),
  };
}

test('rotating usernames from one address hits the per-address limit, on either gateway, whatever the next username, before any hashing', async () => {
  const ip = address();
  const verifications = countVerifications();
  try {
    for (let i = 0; i < 10; i++) expect((await from(i % 2 === 0 ? one : two, ip).login(randomName(), 'whatever-password')).status).toBe(401);
    expect(verifications.count).toBe(10);
    expectLimited(await from(one, ip).login(randomName(), 'whatever-password'));
    expectLimited(await from(two, ip).login(ADMIN.username, ADMIN.password));
    // The refused attempts never reached Argon2.
    expect(verifications.count).toBe(10);
  } finally {
    verifications.restore();
  }
  // Another address is not affected.
  expect((await from(two, address()).login(ADMIN.username, ADMIN.password)).status).toBe(200);
});

test('a burst of parallel wrong passwords for one account checks no more passwords than the limit', async () => {
  const ip = address();
  const verifications = countVerifications();
  try {
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => from(i % 2 === 0 ? one : two, ip).login(ADMIN.username, `guess-${i}`)));
    expect(verifications.count).toBeLessThanOrEqual(3);
    expect(results.filter((r) => r.status === 401).length).toBeLessThanOrEqual(3);
    for (const r of results.filter((r) => r.status !== 401)) expectLimited(r);
  } finally {
    verifications.restore();
  }
});

test('during a flood of 200 sign-ins with random usernames from one address, a correct sign-in from another address succeeds', async () => {
  const attacker = address();
  const flood = Array.from({ length: 200 }, (_, i) => from(i % 2 === 0 ? one : two, attacker).login(randomName(), 'whatever-password'));
  const honest = from(one, address()).login(ADMIN.username, ADMIN.password);
  const [results, mine] = await Promise.all([Promise.all(flood), honest]);

  expect(mine.status).toBe(200);
  expect(mine.body.token).toEqual(expect.any(String));
  const limited = results.filter((r) => r.status === 429);
  // At most the address limit got through to Argon2; everything else was refused before hashing.
  expect(results.length - limited.length).toBeLessThanOrEqual(10);
  for (const r of limited) expectLimited(r);
});

test('device registration is limited per address, across gateways; other addresses still register', async () => {
  const ip = address();
  for (let i = 0; i < 5; i++) expect((await from(i % 2 === 0 ? one : two, ip).register()).status).toBe(201);
  expectLimited(await from(one, ip).register());
  expectLimited(await from(two, ip).register());
  expect((await from(two, address()).register()).status).toBe(201);
});

describe('without a trusted proxy', () => {
  let plain: TestEnv;
  let gateway: RunningGateway;

  beforeAll(async () => {
    plain = await createTestEnv({ REGISTER_RATE_LIMIT: '2' });
    gateway = await startGateway(plain);
  });

  afterAll(async () => {
    await gateway?.close();
    await plain?.dropAll();
  });

  test('X-Forwarded-For is ignored: changing it does not escape the limit of the socket address', async () => {
    const register = (ip: string) => new Api(gateway.baseUrl).request('POST', '/v1/devices', { json: { name: 'd' }, headers: { 'x-forwarded-for': ip } });
    expect((await register('203.0.113.1')).status).toBe(201);
    expect((await register('203.0.113.2')).status).toBe(201);
    expectLimited(await register('203.0.113.3'));
  });
});

test('with Redis unreachable the limits let requests through (the Argon2 limiter still bounds the cost)', async () => {
  const limits = new RateLimits('redis://127.0.0.1:1', `fs_test_${randomBytes(4).toString('hex')}`, createLogger('gateway', 'silent'));
  const app = express();
  app.post('/limited', limits.limit('down', 1, clientAddress, 'limited'), (_req, res) => {
    res.status(204).end();
  });
  app.use(errorHandler);
  const server = await listen(createHttpServer(app), 0, '127.0.0.1');
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/limited`;
    for (let i = 0; i < 3; i++) expect((await fetch(url, { method: 'POST' })).status).toBe(204);
  } finally {
    server.close();
    await limits.close();
  }
});
