import { Api } from '../support/client';
import { DRIVERS, onDriver, storeOutage, type StoreOutage } from '../support/drivers';
import { expectError } from '../support/fixtures';
import { createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/**
 * /readyz names the content store beside MySQL and Redis: a gateway whose bucket (or folder) does not
 * answer is not ready, says so in the API's SERVICE_UNAVAILABLE shape, and is ready again once
 * the store answers, with no restart.
 */
describe.each(DRIVERS)('readiness on the %s driver', (driver) => {
  let outage: StoreOutage;
  let env: TestEnv;
  let gateway: RunningGateway;
  let anon: Api;

  beforeAll(async () => {
    outage = await storeOutage(driver);
    env = await createTestEnv(onDriver(driver, outage.setting));
    gateway = await startGateway(env);
    anon = new Api(gateway.baseUrl);
  });

  afterAll(async () => {
    await gateway?.close();
    await outage?.close();
    await env?.dropAll();
  });

  test('a store that stops answering makes /readyz 503 SERVICE_UNAVAILABLE with Retry-After; it is 200 again once the store is back', async () => {
    const ready = await anon.get('/readyz');
    expect({ status: ready.status, body: ready.body }).toEqual({ status: 200, body: { status: 'ready', mysql: true, redis: true, storage: true } });

    await outage.begin(env);
    try {
      const down = await anon.get('/readyz');
      expectError(down, 503, 'SERVICE_UNAVAILABLE');
      expect(down.headers.get('retry-after')).toBe('5');
      expect(down.body.error.details).toEqual({ mysql: true, redis: true, storage: false });
      // Liveness is not readiness: the process itself is fine.
      expect((await anon.get('/healthz')).status).toBe(200);
    } finally {
      await outage.end(env);
    }

    const back = await anon.get('/readyz');
    expect({ status: back.status, body: back.body }).toEqual({ status: 200, body: { status: 'ready', mysql: true, redis: true, storage: true } });
  });
});
