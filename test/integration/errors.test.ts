import { Api } from '../support/client';
import { countRows, expectError } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

let env: TestEnv;
let gateway: RunningGateway;
let anon: Api;
let api: Api;

beforeAll(async () => {
  env = await createTestEnv();
  gateway = await startGateway(env);
  anon = new Api(gateway.baseUrl);
  ({ api } = await anon.login(ADMIN.username, ADMIN.password));
});

afterAll(async () => {
  await gateway.close();
  await env.dropAll();
});

describe('request bodies', () => {
  test.each([
    ['POST /v1/devices', 'POST', '/v1/devices', false],
    ['POST /v1/auth/login', 'POST', '/v1/auth/login', false],
    ['PATCH /v1/users/me/password', 'PATCH', '/v1/users/me/password', true],
    ['POST /v1/users', 'POST', '/v1/users', true],
  ])('malformed JSON on %s gives 400 INVALID_REQUEST', async (_label, method, url, authenticated) => {
    const client = authenticated ? api : anon;

    const res = await client.request(method, url, { json: '{"name": "unterminated' });

    expectError(res, 400, 'INVALID_REQUEST');
  });

  test('a JSON body over 1 MiB gives 413 with code INVALID_REQUEST and stores nothing', async () => {
    const before = await countRows(env.db, 'devices');

    const res = await anon.post('/v1/devices', { name: 'big', platform: 'x'.repeat(1024 * 1024) });

    expectError(res, 413, 'INVALID_REQUEST');
    expect(await countRows(env.db, 'devices')).toBe(before);
  });

  test.each([
    ['an array', '[]'],
    ['a string', '"device"'],
    ['null', 'null'],
    ['a number', '42'],
  ])('a JSON body that is %s instead of an object gives 400 INVALID_REQUEST', async (_label, json) => {
    expectError(await anon.request('POST', '/v1/devices', { json }), 400, 'INVALID_REQUEST');
  });

  test('a body sent as text/plain gives 400 INVALID_REQUEST', async () => {
    const res = await anon.request('POST', '/v1/devices', { body: '{"name":"x"}', headers: { 'content-type': 'text/plain' } });

    expectError(res, 400, 'INVALID_REQUEST');
  });

  test('no body at all gives 400 INVALID_REQUEST', async () => {
    expectError(await anon.request('POST', '/v1/auth/login'), 400, 'INVALID_REQUEST');
  });

  test.each([
    ['login with a numeric username', 'POST', '/v1/auth/login', { username: 1234, password: 'x', deviceId: 'y' }],
    ['login with a numeric password', 'POST', '/v1/auth/login', { username: 'admin', password: 12345678, deviceId: 'y' }],
    ['login with a deviceId object', 'POST', '/v1/auth/login', { username: 'admin', password: 'x', deviceId: { id: 1 } }],
    ['device registration with a numeric platform', 'POST', '/v1/devices', { name: 'x', platform: 5 }],
    ['user creation with a numeric e-mail', 'POST', '/v1/users', { username: 'typed', password: 'long-enough-1', email: 5 }],
    ['user creation with isAdmin "true"', 'POST', '/v1/users', { username: 'typed', password: 'long-enough-1', isAdmin: 'true' }],
    ['password change with a numeric current_password', 'PATCH', '/v1/users/me/password', { current_password: 1, new_password: 'long-enough-1' }],
  ])('a wrongly typed field (%s) gives 400 INVALID_REQUEST', async (_label, method, url, json) => {
    expectError(await api.request(method, url, { json }), 400, 'INVALID_REQUEST');
  });
});

describe('unknown routes', () => {
  test.each([
    ['GET', '/v1/nothing-here'],
    ['GET', '/nothing-here'],
    ['GET', '/v1'],
    ['PUT', '/v1/files/0123456789abcdef0123456789abcdef'],
    ['PATCH', '/v1/files'],
    ['PUT', '/v1/devices'],
    ['POST', '/v1/folders'],
    ['GET', '/v1/files/0123456789abcdef0123456789abcdef/content/extra'],
  ])('%s %s gives 404 NOT_FOUND as JSON', async (method, url) => {
    expectError(await api.request(method, url), 404, 'NOT_FOUND');
  });

  test('an unknown route needs no token to answer 404', async () => {
    expectError(await anon.get('/v1/nothing-here'), 404, 'NOT_FOUND');
  });
});

describe('query parameters', () => {
  test.each([
    ['/v1/files?limit=1&limit=2'],
    ['/v1/files?offset=0&offset=1'],
    ['/v1/files?folderId=&folderId='],
    ['/v1/files?sort=size&sort=size'],
    ['/v1/files?order=asc&order=asc'],
    ['/v1/files/search?q=a&q=b'],
    ['/v1/files/search?q=a&limit=1&limit=1'],
    ['/v1/folders?parentId=&parentId='],
    ['/v1/users/resolve?username=admin&username=admin'],
  ])('a repeated parameter (%s) gives 400 INVALID_REQUEST', async (url) => {
    expectError(await api.get(url), 400, 'INVALID_REQUEST');
  });

  test.each([
    ['/v1/files/search?q[]=a'],
    ['/v1/users/resolve?username[]=admin'],
  ])('a required parameter given only in array form (%s) gives 400 INVALID_REQUEST', async (url) => {
    expectError(await api.get(url), 400, 'INVALID_REQUEST');
  });
});

describe('error responses', () => {
  test('are JSON with only an error object, never HTML or a stack trace', async () => {
    const res = await anon.request('POST', '/v1/devices', { json: '{oops' });

    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(res.text).not.toMatch(/<html|at .+\(.+:\d+:\d+\)|SyntaxError/i);
  });
});
