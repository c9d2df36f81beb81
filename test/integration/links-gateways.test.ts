import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { startInProcessWorkers, type OpenWorker } from '../support/workers';

/** Share links on two gateways of one service: a revocation holds on both at once; unlock attempts are counted across them. */
describe('share links across gateways', () => {
  let env: TestEnv;
  let one: RunningGateway;
  let two: RunningGateway;
  let workers: OpenWorker;
  let api: Api;

  beforeAll(async () => {
    env = await createTestEnv({ LOGIN_RATE_LIMIT: '3', LOGIN_ADDRESS_RATE_LIMIT: '100' });
    one = await startGateway(env);
    two = await startGateway(env);
    workers = await startInProcessWorkers(env);
    const admin = (await new Api(one.baseUrl).login(ADMIN.username, ADMIN.password)).api;
    ({ api } = await admin.createUser('twogates'));
  });

  afterAll(async () => {
    await workers?.close();
    await one?.close();
    await two?.close();
    await env?.dropAll();
  });

  test('revoked on one gateway, the token is 404 on the other at once', async () => {
    const file = (await api.upload({}, { name: 'x.txt', content: 'x' })).body;
    const link = (await api.post('/v1/links', { resourceId: file.id })).body;
    const onTwo = new Api(two.baseUrl);
    expect((await onTwo.get(`/v1/public/${link.token}/content`)).text).toBe('x');
    expect((await api.delete(`/v1/links/${link.id}`)).status).toBe(204);
    expect((await onTwo.get(`/v1/public/${link.token}`)).status).toBe(404);
    expect((await onTwo.get(`/v1/public/${link.token}/content`)).status).toBe(404);
  });

  test('password attempts are counted per link across gateways before any check: 429 with Retry-After', async () => {
    const file = (await api.upload({}, { name: 'y.txt', content: 'y' })).body;
    const link = (await api.post('/v1/links', { resourceId: file.id, password: 'the right one' })).body;
    const gateways = [new Api(one.baseUrl), new Api(two.baseUrl)];
    const burst = await Promise.all(
      Array.from({ length: 8 }, (_, i) => gateways[i % 2]!.post(`/v1/public/${link.token}/unlock`, { password: `wrong guess ${i}` })),
    );
    const statuses = burst.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 401)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    const limited = burst.find((r) => r.status === 429)!;
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(limited.headers.get('cache-control')).toBe('no-store');
    // Even the right password waits for the window now.
    expect((await gateways[0]!.post(`/v1/public/${link.token}/unlock`, { password: 'the right one' })).status).toBe(429);
  });
});
