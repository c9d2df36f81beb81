import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

let env: TestEnv;
let gateway: RunningGateway;

beforeAll(async () => {
  env = await createTestEnv();
  gateway = await startGateway(env);
});

afterAll(async () => {
  await gateway.close();
  await env.dropAll();
});

test('an administrator created from ADMIN_* can register a device and log in', async () => {
  const anon = new Api(gateway.baseUrl);
  const { api, userId } = await anon.login(ADMIN.username, ADMIN.password);
  const row = await env.db('users').where({ id: userId }).first();
  expect(row.is_admin).toBe(1);
  const files = await api.get('/v1/files');
  expect(files.status).toBe(200);
  expect(files.body).toEqual({ items: [], total: 0, limit: 50, offset: 0 });
});
