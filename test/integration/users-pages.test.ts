import { Api } from '../support/client';
import { expectError } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/** GET /v1/users/me for everyone, and GET /v1/users, the administrators' page of users. */
let env: TestEnv;
let gateway: RunningGateway;
let admin: Api;

beforeAll(async () => {
  env = await createTestEnv();
  gateway = await startGateway(env);
  admin = (await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password)).api;
});

afterAll(async () => {
  await gateway?.close();
  await env?.dropAll();
});

test('GET /users/me answers the caller\'s own account', async () => {
  const created = await admin.post('/v1/users', { username: 'me-myself', password: 'user-password-1', email: 'me@example.com' });
  const me = (await new Api(gateway.baseUrl).login('me-myself', 'user-password-1')).api;
  const res = await me.get('/v1/users/me');
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ id: created.body.id, username: 'me-myself', email: 'me@example.com', isAdmin: false, quotaBytes: created.body.quotaBytes ?? null });
  expect((await admin.get('/v1/users/me')).body).toMatchObject({ username: ADMIN.username, isAdmin: true });
  expectError(await new Api(gateway.baseUrl).get('/v1/users/me'), 401, 'UNAUTHORIZED');
});

test('GET /users pages the active users by username with usedBytes; others get 403; bad paging 400', async () => {
  for (const name of ['zeta-user', 'alpha-user', 'mid-user', 'gone-user']) {
    expect((await admin.post('/v1/users', { username: name, password: 'user-password-1' })).status).toBe(201);
  }
  const gone = (await admin.get('/v1/users?limit=1000')).body.items.find((u: { username: string }) => u.username === 'gone-user');
  expect((await admin.delete(`/v1/users/${gone.id}`)).status).toBe(204);
  const alpha = (await new Api(gateway.baseUrl).login('alpha-user', 'user-password-1')).api;
  expect((await alpha.upload({}, { name: 'a.txt', content: 'twelve bytes' })).status).toBe(201);

  const all = await admin.get('/v1/users?limit=1000');
  expect(all.status).toBe(200);
  const names = all.body.items.map((u: { username: string }) => u.username);
  expect(names).toEqual([...names].sort());
  expect(names).not.toContain('gone-user');
  expect(all.body.total).toBe(names.length);
  const alphaRow = all.body.items.find((u: { username: string }) => u.username === 'alpha-user');
  expect(Object.keys(alphaRow).sort()).toEqual(['createdAt', 'email', 'id', 'isAdmin', 'quotaBytes', 'usedBytes', 'username']);
  expect(alphaRow.usedBytes).toBe(12);

  const page = await admin.get('/v1/users?limit=2&offset=1');
  expect(page.body).toEqual({ items: all.body.items.slice(1, 3), total: all.body.total, limit: 2, offset: 1 });
  expect((await admin.get('/v1/users')).body.limit).toBe(50);
  expect((await admin.get('/v1/users?limit=5000')).body.limit).toBe(1000);
  for (const bad of ['limit=0', 'limit=-1', 'limit=x', 'offset=-1', 'offset=1.5']) expectError(await admin.get(`/v1/users?${bad}`), 400, 'INVALID_REQUEST');
  expectError(await alpha.get('/v1/users'), 403, 'FORBIDDEN');
});
