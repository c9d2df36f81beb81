import { ADMIN, startGateway, type RunningGateway } from '../support/harness';
import { startStack, type TestStack } from '../support/stack';
import { basic, createAppPassword, DavClient } from '../support/dav';

describe('app passwords', () => {
  let stack: TestStack;
  let second: RunningGateway;

  beforeAll(async () => {
    stack = await startStack();
    second = await startGateway(stack.env);
  });
  afterAll(async () => {
    await second.close();
    await stack.close();
  });

  const dav = (base: string, username: string, password: string) => new DavClient(base, basic(username, password));

  test('creation answers the password once, bound to a new device of the caller; the list never shows it', async () => {
    const created = await createAppPassword(stack.admin, 'Laptop Finder');
    expect(Object.keys(created).sort()).toEqual(['createdAt', 'deviceId', 'id', 'name', 'password']);
    expect(created.name).toBe('Laptop Finder');
    // At least 128 random bits.
    expect(Buffer.from(created.password, 'base64url').length).toBeGreaterThanOrEqual(16);
    expect(created.deviceId).toMatch(/^[0-9a-f]{32}$/);
    const device = await stack.env.db('devices').where({ id: created.deviceId }).first();
    expect(device).toMatchObject({ name: 'Laptop Finder', kind: 'app_password', deleted_at: null });

    const row = await stack.env.db('app_passwords').where({ id: created.id }).first();
    expect(JSON.stringify(row)).not.toContain(created.password);

    const list = await stack.admin.get('/v1/app-passwords');
    expect(list.status).toBe(200);
    const item = list.body.items.find((i: { id: string }) => i.id === created.id);
    expect(item).toEqual({ id: created.id, name: 'Laptop Finder', deviceId: created.deviceId, createdAt: created.createdAt, lastUsedAt: null });
    expect(list.text).not.toContain(created.password);
  });

  test('a name must be 1 to 100 characters', async () => {
    const currentPassword = ADMIN.password;
    expect((await stack.admin.post('/v1/app-passwords', { name: '', currentPassword })).status).toBe(400);
    expect((await stack.admin.post('/v1/app-passwords', { name: 'x'.repeat(101), currentPassword })).status).toBe(400);
    expect((await stack.admin.post('/v1/app-passwords', { currentPassword })).status).toBe(400);
    expect((await new DavClient(stack.gateway.baseUrl, '').request('POST', '/v1/app-passwords')).status).toBe(401);
  });

  test('creation asks for the account password: 400 without it, 403 when wrong, and nothing is created', async () => {
    const before = (await stack.env.db('app_passwords').count({ n: '*' }))[0].n;
    const missing = await stack.admin.post('/v1/app-passwords', { name: 'no password' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('INVALID_REQUEST');
    const wrong = await stack.admin.post('/v1/app-passwords', { name: 'stolen token', currentPassword: 'not-the-password' });
    expect(wrong.status).toBe(403);
    expect(wrong.body.error.code).toBe('FORBIDDEN');
    expect((await stack.env.db('app_passwords').count({ n: '*' }))[0].n).toBe(before);
    expect((await stack.admin.post('/v1/app-passwords', { name: 'with password', currentPassword: ADMIN.password })).status).toBe(201);
  });

  test('the app password opens /dav/ and records its use; the account password and nothing at all get 401 with the Basic challenge', async () => {
    const created = await createAppPassword(stack.admin, 'rclone');
    const ok = await dav(stack.gateway.baseUrl, ADMIN.username, created.password).request('OPTIONS', '/dav/');
    expect(ok.status).toBe(200);
    expect(ok.headers.get('dav')).toBe('1, 2');
    // The username is matched case-insensitively, as at sign-in.
    expect((await dav(stack.gateway.baseUrl, ADMIN.username.toUpperCase(), created.password).propfind('/dav/', '0')).status).toBe(207);

    for (const res of [
      await dav(stack.gateway.baseUrl, ADMIN.username, ADMIN.password).propfind('/dav/', '0'),
      await new DavClient(stack.gateway.baseUrl, '').propfind('/dav/', '0'),
      await dav(stack.gateway.baseUrl, 'someone-else', created.password).propfind('/dav/', '0'),
    ]) {
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm="filesync"/);
    }
    const list = await stack.admin.get('/v1/app-passwords');
    const item = list.body.items.find((i: { id: string }) => i.id === created.id);
    expect(Date.parse(item.lastUsedAt)).toBeGreaterThanOrEqual(Date.parse(created.createdAt));
  });

  test('a Bearer token opens /dav/ as on /v1', async () => {
    const res = await new DavClient(stack.gateway.baseUrl, `Bearer ${stack.admin.token}`).propfind('/dav/', '0');
    expect(res.status).toBe(207);
  });

  test('a revoked password gets 401 at once on every gateway, even one that had just checked it', async () => {
    const created = await createAppPassword(stack.admin, 'phone');
    const onSecond = dav(second.baseUrl, ADMIN.username, created.password);
    expect((await onSecond.propfind('/dav/', '0')).status).toBe(207);
    expect((await onSecond.propfind('/dav/', '0')).status).toBe(207);

    expect((await stack.admin.delete(`/v1/app-passwords/${created.id}`)).status).toBe(204);
    expect((await dav(stack.gateway.baseUrl, ADMIN.username, created.password).propfind('/dav/', '0')).status).toBe(401);
    // The revocation reaches the other gateway by its Redis message, not by the cache's expiry.
    const deadline = Date.now() + 1000;
    let status = 0;
    while (Date.now() < deadline && (status = (await onSecond.propfind('/dav/', '0')).status) !== 401) await new Promise((r) => setTimeout(r, 20));
    expect(status).toBe(401);
    expect((await stack.admin.get('/v1/app-passwords')).body.items.map((i: { id: string }) => i.id)).not.toContain(created.id);
    expect((await stack.env.db('devices').where({ id: created.deviceId }).first()).deleted_at).not.toBeNull();
  });

  test('another user cannot list or revoke your passwords (404)', async () => {
    const created = await createAppPassword(stack.admin, 'private');
    const other = await stack.admin.createUser('apw-other');
    expect((await other.api.get('/v1/app-passwords')).body.items).toEqual([]);
    expect((await other.api.delete(`/v1/app-passwords/${created.id}`)).status).toBe(404);
    expect((await stack.admin.delete('/v1/app-passwords/not-an-id')).status).toBe(404);
    expect((await dav(stack.gateway.baseUrl, 'apw-other', created.password).propfind('/dav/', '0')).status).toBe(401);
  });
});

describe('failed WebDAV sign-ins and the login rate limits', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // 4 per minute: the administrator's sign-in as the stack starts takes one.
    stack = await startStack({ LOGIN_RATE_LIMIT: '4', LOGIN_ADDRESS_RATE_LIMIT: '100' });
  });
  afterAll(async () => stack.close());

  test('failed Basic attempts count against the login limit: then 429 with Retry-After, even with the right password', async () => {
    const created = await createAppPassword(stack.admin, 'limited');
    const good = new DavClient(stack.gateway.baseUrl, basic(ADMIN.username, created.password));
    const bad = new DavClient(stack.gateway.baseUrl, basic(ADMIN.username, 'wrong-password'));
    // Successful requests do not count: every WebDAV request signs in.
    for (let i = 0; i < 5; i++) expect((await good.propfind('/dav/', '0')).status).toBe(207);
    for (let i = 0; i < 3; i++) expect((await bad.propfind('/dav/', '0')).status).toBe(401);
    const limited = await bad.propfind('/dav/', '0');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await good.propfind('/dav/', '0')).status).toBe(429);
    // The same budget as POST /v1/auth/login, and as confirming the password for a new app password.
    const device = await stack.admin.registerDevice();
    expect((await stack.admin.post('/v1/auth/login', { username: ADMIN.username, password: ADMIN.password, deviceId: device })).status).toBe(429);
    expect((await stack.admin.post('/v1/app-passwords', { name: 'locked out', currentPassword: ADMIN.password })).status).toBe(429);
  });

  test('a burst of wrong current passwords for new app passwords checks no more than the login limit', async () => {
    const user = await stack.admin.createUser('apw-burst');
    const tries = await Promise.all(Array.from({ length: 30 }, (_, i) => user.api.post('/v1/app-passwords', { name: `guess ${i}`, currentPassword: `guess-${i}` })));
    const statuses = tries.map((r) => r.status);
    expect(statuses.every((s) => s === 403 || s === 429 || s === 503)).toBe(true);
    // The user's sign-in took one of the 4 attempts of this address and username.
    expect(statuses.filter((s) => s === 403).length).toBeLessThanOrEqual(3);
    expect(await stack.env.db('app_passwords').where({ user_id: user.userId }).first()).toBeUndefined();
  });

  test('a burst of parallel Basic guesses is counted before any lookup: no more than the limit are checked', async () => {
    const guesses = Array.from({ length: 40 }, (_, i) => new DavClient(stack.gateway.baseUrl, basic('burst-target', `guess-${i}`)).propfind('/dav/', '0'));
    const statuses = (await Promise.all(guesses)).map((r) => r.status);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    // Each 401 is one credential checked; the per-account limit is 4.
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(4);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(36);
  });
});
