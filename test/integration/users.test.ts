import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import { countRows, expectError, HEX32, ISO_MS } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

let env: TestEnv;
let gateway: RunningGateway;
let anon: Api;
let admin: Api;
let adminId: string;
let bob: { api: Api; userId: string; deviceId: string; token: string };

beforeAll(async () => {
  env = await createTestEnv({ ADMIN_EMAIL: 'root@example.com' });
  gateway = await startGateway(env);
  anon = new Api(gateway.baseUrl);
  ({ api: admin, userId: adminId } = await anon.login(ADMIN.username, ADMIN.password));
  bob = await admin.createUser('Bob.Builder');
});

afterAll(async () => {
  await gateway.close();
  await env.dropAll();
});

const userRow = (id: string) => env.db('users').where({ id }).first();

describe('GET /v1/users/resolve', () => {
  test('resolving an existing username returns only its id and username, never the e-mail or admin flag', async () => {
    const res = await bob.api.get(`/v1/users/resolve?username=${ADMIN.username}`);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: adminId, username: ADMIN.username });
  });

  test('the username matches in its lowercase form and the display form is returned', async () => {
    const lower = await admin.get('/v1/users/resolve?username=bob.builder');
    const upper = await admin.get('/v1/users/resolve?username=BOB.BUILDER');

    expect(lower.status).toBe(200);
    expect(lower.body).toEqual({ id: bob.userId, username: 'Bob.Builder' });
    expect(upper.body).toEqual(lower.body);
  });

  test('a username that only partly matches gives 404 NOT_FOUND', async () => {
    expectError(await bob.api.get('/v1/users/resolve?username=bob'), 404, 'NOT_FOUND');
  });

  test('an unknown username gives 404 NOT_FOUND', async () => {
    expectError(await bob.api.get('/v1/users/resolve?username=nobody-here'), 404, 'NOT_FOUND');
  });

  test('a deleted user gives 404 NOT_FOUND', async () => {
    const created = await admin.post('/v1/users', { username: 'gone-soon', password: 'gone-soon-password' });
    expect((await admin.delete(`/v1/users/${created.body.id}`)).status).toBe(204);

    expectError(await bob.api.get('/v1/users/resolve?username=gone-soon'), 404, 'NOT_FOUND');
  });

  test.each([
    ['a missing', '/v1/users/resolve'],
    ['an empty', '/v1/users/resolve?username='],
  ])('%s username parameter gives 400 INVALID_REQUEST', async (_label, url) => {
    expectError(await bob.api.get(url), 400, 'INVALID_REQUEST');
  });
});

describe('POST /v1/users', () => {
  test('an administrator creates a user: 201 with id, username, email, isAdmin, createdAt and quotaBytes, stored with an Argon2id hash', async () => {
    const res = await admin.post('/v1/users', { username: 'Carol', password: 'carol-password', email: 'carol@example.com' });

    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(HEX32),
      username: 'Carol',
      email: 'carol@example.com',
      isAdmin: false,
      createdAt: expect.stringMatching(ISO_MS),
      // DEFAULT_QUOTA_BYTES is 0 here: no quota.
      quotaBytes: null,
    });
    const row = await userRow(res.body.id);
    expect(row).toMatchObject({ username: 'Carol', username_normalized: 'carol', email: 'carol@example.com', is_admin: 0, deleted_at: null });
    expect(row.password_hash).toMatch(/^\$argon2id\$.*m=65536,t=1,p=4/);
    expect(row.created_at.toISOString()).toBe(res.body.createdAt);
  });

  test('the created user can log in with the given password', async () => {
    await admin.post('/v1/users', { username: 'dave', password: 'dave-password' });

    const session = await new Api(gateway.baseUrl).login('dave', 'dave-password');

    expect((await session.api.get('/v1/files')).status).toBe(200);
  });

  test('without an e-mail the user is stored with email null', async () => {
    const res = await admin.post('/v1/users', { username: 'no-mail', password: 'no-mail-password' });

    expect(res.status).toBe(201);
    expect(res.body.email).toBeNull();
    expect((await userRow(res.body.id)).email).toBeNull();
  });

  test('isAdmin true creates an administrator, who may then create users', async () => {
    const res = await admin.post('/v1/users', { username: 'second-admin', password: 'second-admin-pw', isAdmin: true });
    const session = await new Api(gateway.baseUrl).login('second-admin', 'second-admin-pw');

    const created = await session.api.post('/v1/users', { username: 'made-by-second', password: 'made-by-second-pw' });

    expect(res.status).toBe(201);
    expect(res.body.isAdmin).toBe(true);
    expect((await userRow(res.body.id)).is_admin).toBe(1);
    expect(created.status).toBe(201);
  });

  test('two users may share an e-mail address', async () => {
    const first = await admin.post('/v1/users', { username: 'twin-one', password: 'twin-password', email: 'twins@example.com' });
    const second = await admin.post('/v1/users', { username: 'twin-two', password: 'twin-password', email: 'twins@example.com' });

    expect([first.status, second.status]).toEqual([201, 201]);
  });

  test('a non-administrator gets 403 FORBIDDEN and no user is created', async () => {
    const before = await countRows(env.db, 'users');

    const res = await bob.api.post('/v1/users', { username: 'sneaky', password: 'sneaky-password' });

    expectError(res, 403, 'FORBIDDEN');
    expect(await countRows(env.db, 'users')).toBe(before);
  });

  test('a username equal to an existing one ignoring case gives 409 NAME_CONFLICT and no user is created', async () => {
    const before = await countRows(env.db, 'users');

    const res = await admin.post('/v1/users', { username: 'BOB.builder', password: 'another-password' });

    expectError(res, 409, 'NAME_CONFLICT');
    expect(await countRows(env.db, 'users')).toBe(before);
  });

  test('usernames of exactly 3 and exactly 64 allowed characters are accepted', async () => {
    const short = await admin.post('/v1/users', { username: 'a.-', password: 'three-chars-pw' });
    const long = await admin.post('/v1/users', { username: `${'A_'.repeat(32)}`, password: 'sixty-four-pw' });

    expect([short.status, long.status]).toEqual([201, 201]);
  });

  test.each([
    ['a username of 2 characters', { username: 'ab', password: 'long-enough-1' }],
    ['a username of 65 characters', { username: 'a'.repeat(65), password: 'long-enough-1' }],
    ['a username with a space', { username: 'has space', password: 'long-enough-1' }],
    ['a username with a non-ASCII letter', { username: 'zoë', password: 'long-enough-1' }],
    ['a username with a slash', { username: 'a/b', password: 'long-enough-1' }],
    ['a missing username', { password: 'long-enough-1' }],
    ['a username that is not a string', { username: 12345, password: 'long-enough-1' }],
    ['a password of 7 characters', { username: 'short-pw', password: '1234567' }],
    ['a password of 1025 characters', { username: 'long-pw', password: 'x'.repeat(1025) }],
    ['a missing password', { username: 'no-pw' }],
    ['an e-mail that is not an address', { username: 'bad-mail', password: 'long-enough-1', email: 'not-an-email' }],
    ['isAdmin that is not a boolean', { username: 'bad-flag', password: 'long-enough-1', isAdmin: 'yes' }],
  ])('%s gives 400 INVALID_REQUEST and no user is created', async (_label, body) => {
    const before = await countRows(env.db, 'users');

    const res = await admin.post('/v1/users', body);

    expectError(res, 400, 'INVALID_REQUEST');
    expect(await countRows(env.db, 'users')).toBe(before);
  });
});

describe('DELETE /v1/users/:id', () => {
  test('an administrator deletes a user: 204, the row is marked deleted, and the user can no longer log in', async () => {
    const created = await admin.post('/v1/users', { username: 'erin', password: 'erin-password' });

    const res = await admin.delete(`/v1/users/${created.body.id}`);

    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const row = await userRow(created.body.id);
    expect(row.deleted_at).toBeInstanceOf(Date);
    const deviceId = await anon.registerDevice();
    expectError(await anon.post('/v1/auth/login', { username: 'erin', password: 'erin-password', deviceId }), 401, 'UNAUTHORIZED');
  });

  test('deleting a user who is already deleted gives 404 NOT_FOUND', async () => {
    const created = await admin.post('/v1/users', { username: 'frank', password: 'frank-password' });
    await admin.delete(`/v1/users/${created.body.id}`);

    expectError(await admin.delete(`/v1/users/${created.body.id}`), 404, 'NOT_FOUND');
  });

  test.each([
    ['an unknown id', newId()],
    ['a malformed id', 'not-an-id'],
  ])('deleting %s gives 404 NOT_FOUND', async (_label, id) => {
    expectError(await admin.delete(`/v1/users/${id}`), 404, 'NOT_FOUND');
  });

  test('a non-administrator gets 403 FORBIDDEN and the user stays active', async () => {
    const res = await bob.api.delete(`/v1/users/${adminId}`);

    expectError(res, 403, 'FORBIDDEN');
    expect((await userRow(adminId)).deleted_at).toBeNull();
  });

  test('an administrator cannot delete their own account: 400 INVALID_REQUEST and the account stays active', async () => {
    const res = await admin.delete(`/v1/users/${adminId}`);

    expectError(res, 400, 'INVALID_REQUEST');
    expect((await userRow(adminId)).deleted_at).toBeNull();
  });
});
