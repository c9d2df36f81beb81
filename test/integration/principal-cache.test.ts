import { STATEMENTS } from '../../shared/db/statement.tags';
import { Api } from '../support/client';
import { expectError, waitFor } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { RedisServer } from '../support/redis.server';
import { countStatements } from '../support/statements';

/** How many principal lookups (a token's user and device) reach MySQL through `env.db` while `work` runs. */
const lookupsDuring = (env: TestEnv, work: () => Promise<unknown>): Promise<number> => countStatements(env.db, STATEMENTS.findPrincipal, work);

/** Sends `times` list requests one after the other, each expected to succeed. */
async function listTimes(api: Api, times: number): Promise<void> {
  for (let i = 0; i < times; i++) expect((await api.get('/v1/files')).status).toBe(200);
}

async function adminOf(gateway: RunningGateway): Promise<Api> {
  return (await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password)).api;
}

describe('principal cache (AUTH_CACHE_MS 60 s)', () => {
  let redis: RedisServer;
  let env: TestEnv;
  let one: RunningGateway;
  let two: RunningGateway;

  beforeAll(async () => {
    redis = await RedisServer.start();
    env = await createTestEnv({ REDIS_URL: redis.url, AUTH_CACHE_MS: '60000' });
    [one, two] = await Promise.all([startGateway(env), startGateway(env)]);
  });

  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()]);
    await env?.dropAll();
    await redis?.stop();
  });

  test('a client\'s requests after the first cost no lookup of its user and device', async () => {
    const user = await (await adminOf(one)).createUser('repeat');

    expect(await lookupsDuring(env, () => listTimes(user.api, 5))).toBe(1);
  });

  test('an account deleted on one gateway is refused at once by the other, long before the TTL', async () => {
    const admin = await adminOf(one);
    const victim = await admin.createUser('doomed-elsewhere');
    const onTwo = new Api(two.baseUrl, victim.token);
    expect((await onTwo.get('/v1/files')).status).toBe(200);
    expect((await onTwo.get('/v1/files')).status).toBe(200);

    expect((await admin.delete(`/v1/users/${victim.userId}`)).status).toBe(204);

    expectError(await victim.api.get('/v1/files'), 401, 'UNAUTHORIZED');
    expect(await waitFor(async () => (await onTwo.get('/v1/files')).status === 401, 2000, 10)).toBe(true);
  });

  test('while its subscription is down a gateway checks MySQL on every request, and refuses a deleted account', async () => {
    const admin = await adminOf(one);
    const user = await admin.createUser('redis-outage');
    expect((await user.api.get('/v1/files')).status).toBe(200);

    await redis.kill();
    try {
      // Once the gateway has seen its connection close, the cached principal is no longer used.
      const noticed = await waitFor(async () => (await lookupsDuring(env, () => listTimes(user.api, 1))) > 0, 3000, 20);
      expect(noticed).toBe(true);

      expect(await lookupsDuring(env, () => listTimes(user.api, 3))).toBe(3);

      // Deleted behind the gateways' backs: no message can reach them, and none is needed.
      await env.db('users').where({ id: user.userId }).update({ deleted_at: new Date() });
      expectError(await user.api.get('/v1/files'), 401, 'UNAUTHORIZED');
    } finally {
      await redis.restart(false);
      const ready = async (g: RunningGateway) => (await fetch(`${g.baseUrl}/readyz`)).ok;
      await waitFor(async () => (await ready(one)) && (await ready(two)), 10000, 50);
    }
  });
});

describe('principal cache off (AUTH_CACHE_MS 0)', () => {
  let env: TestEnv;
  let gateway: RunningGateway;

  beforeAll(async () => {
    env = await createTestEnv({ AUTH_CACHE_MS: '0' });
    gateway = await startGateway(env);
  });

  afterAll(async () => {
    await gateway?.close();
    await env?.dropAll();
  });

  test('every request looks its user and device up', async () => {
    const user = await (await adminOf(gateway)).createUser('uncached');

    expect(await lookupsDuring(env, () => listTimes(user.api, 4))).toBe(4);
  });
});
