import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/** Argon2 is bounded: a burst of logins queues briefly, then is turned away, and other work goes on. */
let env: TestEnv;
let gateway: RunningGateway;

beforeAll(async () => {
  env = await createTestEnv({ LOGIN_CONCURRENCY: '2', LOGIN_QUEUE_TIMEOUT_MS: '300' });
  gateway = await startGateway(env);
});

afterAll(async () => {
  await gateway.close();
  await env.dropAll();
});

test('100 simultaneous logins: those that cannot start in time get 503 with Retry-After, and uploads still go through', async () => {
  const anon = new Api(gateway.baseUrl);
  const { api } = await anon.login(ADMIN.username, ADMIN.password);
  const deviceId = await anon.registerDevice('burst');

  const burst = Array.from({ length: 100 }, () => anon.post('/v1/auth/login', { username: ADMIN.username, password: ADMIN.password, deviceId }));
  const upload = api.upload({}, { name: 'during-burst.txt', content: 'still served' });
  const [results, uploaded] = await Promise.all([Promise.all(burst), upload]);

  const statuses = new Set(results.map((r) => r.status));
  expect([...statuses].every((s) => s === 200 || s === 503)).toBe(true);
  const refused = results.filter((r) => r.status === 503);
  expect(refused.length).toBeGreaterThan(0);
  expect(results.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(2);
  for (const r of refused) {
    expect(r.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
  }
  expect(uploaded.status).toBe(201);
  expect(await env.db('resources').where({ name: 'during-burst.txt' }).first()).toBeDefined();
});
