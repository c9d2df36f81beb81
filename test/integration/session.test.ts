import { TokenService } from '../../services/gateway/auth/token.service';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, JWT_SECRET, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/** The web app's cookie session: HttpOnly, bound to a new device, refused from other origins. */
let env: TestEnv;
let gateway: RunningGateway;
let origin: string;
/** The admin's API client, signed in by a test below (sign-ins of the admin are counted by the login limits). */
let admin: Api;

const CHROME_LINUX = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36';

async function signIn(password = ADMIN.password, headers: Record<string, string> = {}) {
  return fetch(`${origin}/v1/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin', 'user-agent': CHROME_LINUX, ...headers },
    body: JSON.stringify({ username: ADMIN.username, password }),
  });
}

const cookieOf = (res: Response) => (res.headers.get('set-cookie') ?? '').split(';')[0]!;

beforeAll(async () => {
  env = await createTestEnv({ LOGIN_RATE_LIMIT: '5' });
  gateway = await startGateway(env);
  origin = gateway.baseUrl;
});

afterAll(async () => {
  await gateway?.close();
  await env?.dropAll();
});

test('signing in sets an HttpOnly SameSite cookie of a new device named after the browser, and no token in the body', async () => {
  const res = await signIn();
  expect(res.status).toBe(200);
  const setCookie = res.headers.get('set-cookie') ?? '';
  expect(setCookie).toMatch(/^filesync_session=[\w.-]+;/);
  expect(setCookie).toMatch(/HttpOnly/i);
  expect(setCookie).toMatch(/SameSite=Lax/i);
  expect(setCookie).not.toMatch(/Secure/i);
  const body = (await res.json()) as { deviceId: string; user: { id: string } };
  expect(body).toEqual({ user: { id: expect.any(String), username: 'admin', isAdmin: true }, deviceId: expect.any(String), expiresAt: expect.any(String) });
  expect(JSON.stringify(body)).not.toContain(cookieOf(res).split('=')[1]);
  const device = await env.db('devices').where({ id: body.deviceId }).first();
  expect(device).toMatchObject({ name: 'Chrome on Linux', user_id: body.user.id, kind: 'client' });

  const me = await fetch(`${origin}/v1/session`, { headers: { cookie: cookieOf(res) } });
  expect(me.status).toBe(200);
  expect(((await me.json()) as { deviceId: string }).deviceId).toBe(body.deviceId);
  expect(me.headers.get('set-cookie')).toMatch(/^filesync_session=/);
});

test('with the cookie, reads work from anywhere but writes only from the same origin', async () => {
  const cookie = cookieOf(await signIn());
  const folder = { ops: [{ opId: 1, type: 'create', resourceId: 'a'.repeat(32), payload: { resourceType: 'folder', name: 'x' } }] };
  const write = (headers: Record<string, string>) =>
    fetch(`${origin}/v1/files`, { method: 'POST', headers: { cookie, ...headers }, body: new FormData() });
  const foreign: Array<Record<string, string>> = [{ 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }, { origin: 'http://127.0.0.1:1' }, {}];
  for (const headers of foreign) {
    const res = await write(headers);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('FORBIDDEN');
  }
  const sync = await fetch(`${origin}/v1/sync/ops`, { method: 'POST', headers: { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' }, body: JSON.stringify(folder) });
  expect(sync.status).toBe(403);
  // Same origin: the request goes on (and fails on its empty body, not on its origin).
  expect((await write({ 'sec-fetch-site': 'same-origin' })).status).toBe(400);
  expect((await write({ origin })).status).toBe(400);
  expect((await fetch(`${origin}/v1/items`, { headers: { cookie, 'sec-fetch-site': 'cross-site' } })).status).toBe(200);
});

test('a Bearer token is not subject to the origin check, and signing out clears the cookie', async () => {
  const { token, api } = await new Api(origin).login(ADMIN.username, ADMIN.password);
  admin = api;
  const bearer = await fetch(`${origin}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'sec-fetch-site': 'cross-site' }, body: new FormData() });
  expect(bearer.status).toBe(400);
  const bad = await fetch(`${origin}/v1/items`, { headers: { authorization: 'Bearer nonsense', cookie: 'filesync_session=also.nonsense' } });
  expect(bad.status).toBe(401);
  const cookie = cookieOf(await signIn());
  const out = await fetch(`${origin}/v1/session`, { method: 'DELETE', headers: { cookie, 'sec-fetch-site': 'same-origin' } });
  expect(out.status).toBe(204);
  expect(out.headers.get('set-cookie')).toMatch(/^filesync_session=;.*Expires=Thu, 01 Jan 1970/);
  // Signing out retired the browser's device: the old cookie is refused from then on.
  expect((await fetch(`${origin}/v1/items`, { headers: { cookie } })).status).toBe(401);
});

test('a sign-in posted from another origin is refused; a wrong password is 401; the login limits count sign-ins', async () => {
  expect((await signIn(ADMIN.password, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
  const wrong = await signIn('wrong-password');
  expect(wrong.status).toBe(401);
  expect(wrong.headers.get('set-cookie')).toBeNull();
  // LOGIN_RATE_LIMIT=5 per address and username: the earlier sign-ins used it up.
  const limited = await signIn('wrong-password');
  expect(limited.status).toBe(429);
  expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
  const login = await new Api(origin).post('/v1/auth/login', { username: ADMIN.username, password: ADMIN.password, deviceId: 'b'.repeat(32) });
  expect(login.status).toBe(429);
});

test('signing in again with the cookie of an active device of the same user, even lapsed, keeps that device', async () => {
  for (const username of ['dana', 'erin']) expect((await admin.post('/v1/users', { username, password: 'user-password-1' })).status).toBe(201);
  const as = (username: string, cookie?: string) =>
    fetch(`${origin}/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin', 'user-agent': CHROME_LINUX, ...(cookie ? { cookie } : {}) },
      body: JSON.stringify({ username, password: 'user-password-1' }),
    });
  const deviceOf = async (res: Response) => {
    expect(res.status).toBe(200);
    return ((await res.json()) as { deviceId: string }).deviceId;
  };
  const first = await as('dana');
  const cookie = cookieOf(first);
  const device = await deviceOf(first);
  expect(await deviceOf(await as('dana', cookie))).toBe(device);
  // A cookie that lapsed a week ago still names the browser's device.
  const userId = (await env.db('devices').where({ id: device }).first()).user_id as string;
  const lapsed = new TokenService(JWT_SECRET).issue({ userId, deviceId: device }, new Date(Date.now() - 8 * 24 * 3600 * 1000)).token;
  expect((await fetch(`${origin}/v1/session`, { headers: { cookie: `filesync_session=${lapsed}` } })).status).toBe(401);
  expect(await deviceOf(await as('dana', `filesync_session=${lapsed}`))).toBe(device);
  // Another user's cookie, a forged one: a new device.
  expect(await deviceOf(await as('erin', cookie))).not.toBe(device);
  const forged = new TokenService('another-secret-that-is-long-enough-for-hs256-000000').issue({ userId, deviceId: device }).token;
  expect(await deviceOf(await as('dana', `filesync_session=${forged}`))).not.toBe(device);
  const [{ n }] = (await env.db('devices').where({ user_id: userId, kind: 'client' }).whereNull('deleted_at').count({ n: '*' })) as [{ n: number | string }];
  expect(Number(n)).toBe(2);
  // Signed out, the device is retired: the same cookie signs in on a new one.
  expect((await fetch(`${origin}/v1/session`, { method: 'DELETE', headers: { cookie, 'sec-fetch-site': 'same-origin' } })).status).toBe(204);
  expect(await deviceOf(await as('dana', cookie))).not.toBe(device);
});
