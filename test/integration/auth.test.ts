import jwt from 'jsonwebtoken';
import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import { craft, countRows, expectError, HEX32, ISO_MS, nowSeconds } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

let env: TestEnv;
let gateway: RunningGateway;
let anon: Api;
let admin: Api;
let adminId: string;
let user: { api: Api; userId: string; deviceId: string; token: string };

const PASSWORD = 'user-password-1';

beforeAll(async () => {
  env = await createTestEnv();
  gateway = await startGateway(env);
  anon = new Api(gateway.baseUrl);
  const session = await anon.login(ADMIN.username, ADMIN.password);
  admin = session.api;
  adminId = session.userId;
  user = await admin.createUser('alice', PASSWORD);
});

afterAll(async () => {
  await gateway.close();
  await env.dropAll();
});

describe('POST /v1/devices', () => {
  test('registering a device needs no token, returns 201 with id, name, platform and createdAt, and stores it without an owner', async () => {
    const res = await anon.post('/v1/devices', { name: 'Laptop', platform: 'linux' });

    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.stringMatching(HEX32), name: 'Laptop', platform: 'linux', createdAt: expect.stringMatching(ISO_MS) });
    const row = await env.db('devices').where({ id: res.body.id }).first();
    expect(row).toMatchObject({ name: 'Laptop', platform: 'linux', kind: 'client', user_id: null, deleted_at: null });
    expect(row.created_at.toISOString()).toBe(res.body.createdAt);
  });

  test('a device without a platform is stored with platform null', async () => {
    const res = await anon.post('/v1/devices', { name: 'Phone' });

    expect(res.status).toBe(201);
    expect(res.body.platform).toBeNull();
    expect((await env.db('devices').where({ id: res.body.id }).first()).platform).toBeNull();
  });

  test('a name of 100 characters and a platform of 50 characters are accepted', async () => {
    const res = await anon.post('/v1/devices', { name: 'n'.repeat(100), platform: 'p'.repeat(50) });

    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'n'.repeat(100), platform: 'p'.repeat(50) });
  });

  test.each([
    ['a missing name', { platform: 'linux' }],
    ['an empty name', { name: '' }],
    ['a name of 101 characters', { name: 'n'.repeat(101) }],
    ['a name that is not a string', { name: 42 }],
    ['a platform of 51 characters', { name: 'ok', platform: 'p'.repeat(51) }],
  ])('%s gives 400 INVALID_REQUEST and registers nothing', async (_label, body) => {
    const before = await countRows(env.db, 'devices');

    const res = await anon.post('/v1/devices', body);

    expectError(res, 400, 'INVALID_REQUEST');
    expect(await countRows(env.db, 'devices')).toBe(before);
  });
});

describe('POST /v1/auth/login', () => {
  test('valid credentials on a registered device return an HS256 bearer token for that user and device, valid 7 days', async () => {
    const deviceId = await anon.registerDevice();

    const res = await anon.post('/v1/auth/login', { username: 'alice', password: PASSWORD, deviceId });

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      token: expect.any(String),
      tokenType: 'Bearer',
      expiresAt: expect.stringMatching(ISO_MS),
      user: { id: user.userId, username: 'alice' },
      deviceId,
    });
    const decoded = jwt.decode(res.body.token, { complete: true })!;
    const claims = decoded.payload as jwt.JwtPayload;
    expect(decoded.header.alg).toBe('HS256');
    expect(claims).toMatchObject({ sub: user.userId, device_id: deviceId });
    expect(claims.exp! - claims.iat!).toBe(7 * 24 * 3600);
    expect(new Date(claims.exp! * 1000).toISOString()).toBe(res.body.expiresAt);
    expect((await new Api(gateway.baseUrl, res.body.token).get('/v1/files')).status).toBe(200);
  });

  test('after login the device record keeps the user as its informative owner', async () => {
    const deviceId = await anon.registerDevice();
    expect((await env.db('devices').where({ id: deviceId }).first()).user_id).toBeNull();

    const res = await anon.post('/v1/auth/login', { username: 'alice', password: PASSWORD, deviceId });

    expect(res.status).toBe(200);
    const row = await env.db('devices').where({ id: deviceId }).first();
    expect(row.user_id).toBe(user.userId);
  });

  test('a wrong password gives 401 UNAUTHORIZED and leaves the device without an owner', async () => {
    const deviceId = await anon.registerDevice();

    const res = await anon.post('/v1/auth/login', { username: 'alice', password: 'wrong-password', deviceId });

    expectError(res, 401, 'UNAUTHORIZED');
    expect((await env.db('devices').where({ id: deviceId }).first()).user_id).toBeNull();
  });

  test('unknown user, deleted user and wrong password give identical 401 responses', async () => {
    const doomed = await admin.post('/v1/users', { username: 'doomed', password: 'doomed-password' });
    expect((await admin.delete(`/v1/users/${doomed.body.id}`)).status).toBe(204);
    const deviceId = await anon.registerDevice();

    const unknown = await anon.post('/v1/auth/login', { username: 'nobody-at-all', password: 'whatever-1', deviceId });
    const deleted = await anon.post('/v1/auth/login', { username: 'doomed', password: 'doomed-password', deviceId });
    const wrong = await anon.post('/v1/auth/login', { username: 'alice', password: 'not-her-password', deviceId });

    expectError(unknown, 401, 'UNAUTHORIZED');
    expect({ status: deleted.status, body: deleted.text, type: deleted.headers.get('content-type') }).toEqual({
      status: unknown.status,
      body: unknown.text,
      type: unknown.headers.get('content-type'),
    });
    expect({ status: wrong.status, body: wrong.text, type: wrong.headers.get('content-type') }).toEqual({
      status: unknown.status,
      body: unknown.text,
      type: unknown.headers.get('content-type'),
    });
  });

  test.each(['username', 'password', 'deviceId'])('a missing %s gives 400 INVALID_REQUEST', async (field) => {
    const deviceId = await anon.registerDevice();
    const body: Record<string, string> = { username: 'alice', password: PASSWORD, deviceId };
    delete body[field];

    const res = await anon.post('/v1/auth/login', body);

    expectError(res, 400, 'INVALID_REQUEST');
  });

  test.each([
    ['a well-formed id that is not registered', newId()],
    ['a malformed id', 'not-a-device'],
  ])('a deviceId that is %s gives 400 INVALID_REQUEST even with the right password', async (_label, deviceId) => {
    const res = await anon.post('/v1/auth/login', { username: 'alice', password: PASSWORD, deviceId });

    expectError(res, 400, 'INVALID_REQUEST');
  });

  test('a deviceId of a deleted device gives 400 INVALID_REQUEST', async () => {
    const deviceId = await anon.registerDevice();
    await env.db('devices').where({ id: deviceId }).update({ deleted_at: new Date() });

    const res = await anon.post('/v1/auth/login', { username: 'alice', password: PASSWORD, deviceId });

    expectError(res, 400, 'INVALID_REQUEST');
  });
});

describe('PATCH /v1/users/me/password', () => {
  let pw: { api: Api; userId: string; deviceId: string; token: string };

  beforeAll(async () => {
    pw = await admin.createUser('changer', 'first-password');
  });

  test('with the right current_password it returns 204, stores a new Argon2id hash, and only the new password logs in', async () => {
    const before = (await env.db('users').where({ id: pw.userId }).first()).password_hash;

    const res = await pw.api.patch('/v1/users/me/password', { current_password: 'first-password', new_password: 'second-password' });

    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const after = (await env.db('users').where({ id: pw.userId }).first()).password_hash;
    expect(after).not.toBe(before);
    expect(after).toMatch(/^\$argon2id\$/);
    const deviceId = await anon.registerDevice();
    expect((await anon.post('/v1/auth/login', { username: 'changer', password: 'second-password', deviceId })).status).toBe(200);
    expectError(await anon.post('/v1/auth/login', { username: 'changer', password: 'first-password', deviceId }), 401, 'UNAUTHORIZED');
  });

  test('tokens issued before a password change stay valid', async () => {
    const session = await anon.login('alice', PASSWORD);
    const other = await new Api(gateway.baseUrl).login('alice', PASSWORD);

    const res = await session.api.patch('/v1/users/me/password', { current_password: PASSWORD, new_password: 'alice-new-password' });

    expect(res.status).toBe(204);
    expect((await session.api.get('/v1/files')).status).toBe(200);
    expect((await other.api.get('/v1/files')).status).toBe(200);
    expect((await session.api.patch('/v1/users/me/password', { current_password: 'alice-new-password', new_password: PASSWORD })).status).toBe(204);
  });

  test('a wrong current_password gives 403 FORBIDDEN and keeps the stored hash', async () => {
    const before = (await env.db('users').where({ id: user.userId }).first()).password_hash;

    const res = await user.api.patch('/v1/users/me/password', { current_password: 'not-the-password', new_password: 'another-password' });

    expectError(res, 403, 'FORBIDDEN');
    expect((await env.db('users').where({ id: user.userId }).first()).password_hash).toBe(before);
  });

  test.each([
    ['a new_password of 7 characters', { current_password: PASSWORD, new_password: '1234567' }],
    ['a new_password of 1025 characters', { current_password: PASSWORD, new_password: 'x'.repeat(1025) }],
    ['a missing new_password', { current_password: PASSWORD }],
    ['a missing current_password', { new_password: 'long-enough-1' }],
    ['a new_password that is not a string', { current_password: PASSWORD, new_password: 12345678 }],
  ])('%s gives 400 INVALID_REQUEST and keeps the stored hash', async (_label, body) => {
    const before = (await env.db('users').where({ id: user.userId }).first()).password_hash;

    const res = await user.api.patch('/v1/users/me/password', body);

    expectError(res, 400, 'INVALID_REQUEST');
    expect((await env.db('users').where({ id: user.userId }).first()).password_hash).toBe(before);
  });

  test('new passwords of exactly 8 and exactly 1024 characters are accepted', async () => {
    const session = await admin.createUser('boundary', 'initial-password');

    const short = await session.api.patch('/v1/users/me/password', { current_password: 'initial-password', new_password: 'p'.repeat(8) });
    const long = await session.api.patch('/v1/users/me/password', { current_password: 'p'.repeat(8), new_password: 'p'.repeat(1024) });

    expect([short.status, long.status]).toEqual([204, 204]);
  });
});

describe('password hashing', () => {
  test('stored password hashes are Argon2id with memory 64 MiB, time cost 1 and parallelism 4', async () => {
    const rows = await env.db('users').whereIn('id', [adminId, user.userId]).select('password_hash');

    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.password_hash).toMatch(/^\$argon2id\$/);
      expect(row.password_hash).toContain('m=65536,t=1,p=4');
    }
  });
});

describe('token verification', () => {
  const claimsOf = (extra: Record<string, unknown> = {}) => ({
    sub: user.userId,
    device_id: user.deviceId,
    iat: nowSeconds(),
    exp: nowSeconds() + 3600,
    ...extra,
  });
  const withBearer = (token: string) => anon.get('/v1/files', { authorization: `Bearer ${token}` });

  test('a token crafted with HS256, the right secret and valid claims is accepted (the probes below differ only in one respect)', async () => {
    const res = await withBearer(craft.hs256(claimsOf()));

    expect(res.status).toBe(200);
  });

  test('an unsigned token (alg none) gives 401 UNAUTHORIZED', async () => {
    expectError(await withBearer(craft.unsigned(claimsOf())), 401, 'UNAUTHORIZED');
  });

  test('a token signed with HS512 and the right secret gives 401 UNAUTHORIZED', async () => {
    expectError(await withBearer(craft.hs512(claimsOf())), 401, 'UNAUTHORIZED');
  });

  test('a token signed with another secret gives 401 UNAUTHORIZED', async () => {
    expectError(await withBearer(craft.hs256(claimsOf(), 'another-secret-that-is-long-enough-0123456789')), 401, 'UNAUTHORIZED');
  });

  test('a token whose payload was changed after signing gives 401 UNAUTHORIZED', async () => {
    const tampered = craft.withPayload(user.token, { ...(jwt.decode(user.token) as object), sub: adminId });

    expectError(await withBearer(tampered), 401, 'UNAUTHORIZED');
  });

  test('an expired token gives 401 UNAUTHORIZED', async () => {
    expectError(await withBearer(craft.hs256(claimsOf({ iat: nowSeconds() - 7200, exp: nowSeconds() - 60 }))), 401, 'UNAUTHORIZED');
  });

  test('a token without exp gives 401 UNAUTHORIZED', async () => {
    const { exp: _exp, ...noExp } = claimsOf();

    expectError(await withBearer(craft.hs256(noExp)), 401, 'UNAUTHORIZED');
  });

  test('a token whose exp is more than 7 days after its iat gives 401 UNAUTHORIZED, though signed with the right secret', async () => {
    expectError(await withBearer(craft.hs256(claimsOf({ exp: nowSeconds() + 7 * 24 * 3600 + 60 }))), 401, 'UNAUTHORIZED');
    expectError(await withBearer(craft.hs256(claimsOf({ exp: nowSeconds() + 5 * 365 * 24 * 3600 }))), 401, 'UNAUTHORIZED');
  });

  test('a token without iat, or with an iat in the future, gives 401 UNAUTHORIZED', async () => {
    const { iat: _iat, ...noIat } = claimsOf();
    expectError(await withBearer(craft.hs256WithoutIat(noIat)), 401, 'UNAUTHORIZED');
    const later = nowSeconds() + 365 * 24 * 3600;
    expectError(await withBearer(craft.hs256(claimsOf({ iat: later, exp: later + 3600 }))), 401, 'UNAUTHORIZED');
  });

  test('a token with exactly the 7-day lifetime (as issued) is accepted', async () => {
    expect((await withBearer(craft.hs256(claimsOf({ exp: nowSeconds() + 7 * 24 * 3600 })))).status).toBe(200);
  });

  test.each([['bearer'], ['BEARER'], ['BeArEr']])('the scheme is case-insensitive (RFC 9110): "%s <token>" is accepted', async (scheme) => {
    const res = await anon.get('/v1/files', { authorization: `${scheme} ${user.token}` });

    expect(res.status).toBe(200);
  });

  test('a token for a user id that does not exist gives 401 UNAUTHORIZED', async () => {
    expectError(await withBearer(craft.hs256(claimsOf({ sub: newId() }))), 401, 'UNAUTHORIZED');
  });

  test('a token of a user deleted by an administrator gives 401 UNAUTHORIZED', async () => {
    const victim = await admin.createUser('short-lived');
    expect((await victim.api.get('/v1/files')).status).toBe(200);

    expect((await admin.delete(`/v1/users/${victim.userId}`)).status).toBe(204);
    const res = await victim.api.get('/v1/files');

    expectError(res, 401, 'UNAUTHORIZED');
  });

  test('a token whose device has been deleted gives 401 UNAUTHORIZED', async () => {
    const session = await anon.login('alice', PASSWORD);
    await env.db('devices').where({ id: session.deviceId }).update({ deleted_at: new Date() });

    expectError(await session.api.get('/v1/files'), 401, 'UNAUTHORIZED');
  });

  test.each([
    ['garbage after Bearer', 'Bearer garbage'],
    ['three garbage segments', 'Bearer aaa.bbb.ccc'],
    ['an empty Bearer', 'Bearer '],
    ['another scheme', 'Basic YWxpY2U6cGFzc3dvcmQ='],
    ['a token without a scheme', '__TOKEN__'],
    ['a token followed by junk', 'Bearer __TOKEN__ junk'],
  ])('an Authorization header with %s gives 401 UNAUTHORIZED', async (_label, header) => {
    const res = await anon.get('/v1/files', { authorization: header.replace('__TOKEN__', user.token) });

    expectError(res, 401, 'UNAUTHORIZED');
  });

  test.each([
    ['GET', '/v1/files'],
    ['GET', '/v1/files/search?q=a'],
    ['GET', `/v1/files/${'a'.repeat(32)}`],
    ['GET', `/v1/files/${'a'.repeat(32)}/content`],
    ['DELETE', `/v1/files/${'a'.repeat(32)}`],
    ['POST', '/v1/files'],
    ['GET', '/v1/folders'],
    ['PATCH', '/v1/users/me/password'],
    ['GET', '/v1/users/resolve?username=alice'],
    ['POST', '/v1/users'],
    ['DELETE', `/v1/users/${'a'.repeat(32)}`],
  ])('%s %s without a token gives 401 UNAUTHORIZED', async (method, url) => {
    const res = await anon.request(method, url, method === 'PATCH' || method === 'POST' ? { json: {} } : {});

    expectError(res, 401, 'UNAUTHORIZED');
  });
});

describe('login rate limit', () => {
  let limited: TestEnv;
  let limitedGateway: RunningGateway;
  let client: Api;
  let deviceId: string;

  beforeAll(async () => {
    limited = await createTestEnv({ LOGIN_RATE_LIMIT: '3' });
    limitedGateway = await startGateway(limited);
    client = new Api(limitedGateway.baseUrl);
    deviceId = await client.registerDevice();
  });

  afterAll(async () => {
    await limitedGateway.close();
    await limited.dropAll();
  });

  test('with LOGIN_RATE_LIMIT=3 the fourth attempt within a minute gets 429 RATE_LIMITED with Retry-After, even with the right password', async () => {
    for (let i = 0; i < 3; i++) {
      expectError(await client.post('/v1/auth/login', { username: ADMIN.username, password: 'wrong-password', deviceId }), 401, 'UNAUTHORIZED');
    }

    const res = await client.post('/v1/auth/login', { username: ADMIN.username, password: ADMIN.password, deviceId });

    expectError(res, 429, 'RATE_LIMITED');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number.isInteger(Number(res.headers.get('retry-after')))).toBe(true);
  });

  test('the limit counts per username: another username from the same address is not limited', async () => {
    for (let i = 0; i < 3; i++) await client.post('/v1/auth/login', { username: 'someone', password: 'wrong-password', deviceId });
    expectError(await client.post('/v1/auth/login', { username: 'someone', password: 'wrong-password', deviceId }), 429, 'RATE_LIMITED');

    const res = await client.post('/v1/auth/login', { username: 'someone-else', password: 'wrong-password', deviceId });

    expectError(res, 401, 'UNAUTHORIZED');
  });
});
