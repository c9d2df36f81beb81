import { Api } from '../support/client';
import { basic, createAppPassword, DavClient } from '../support/dav';
import { expectError, waitFor } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/**
 * A user's devices: GET /v1/devices lists the clients they signed in on, DELETE /v1/devices/:id
 * retires one of theirs (app-password devices included) and every gateway refuses its tokens at once,
 * although both gateways cache principals for a minute.
 */
let env: TestEnv;
let one: RunningGateway;
let two: RunningGateway;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

beforeAll(async () => {
  env = await createTestEnv({ AUTH_CACHE_MS: '60000' });
  [one, two] = await Promise.all([startGateway(env), startGateway(env)]);
});

afterAll(async () => {
  await Promise.all([one?.close(), two?.close()]);
  await env?.dropAll();
});

const admin = async () => (await new Api(one.baseUrl).login(ADMIN.username, ADMIN.password)).api;

test('the list holds the caller\'s client devices, marks the calling one, and leaves out app passwords\' devices', async () => {
  const user = await (await admin()).createUser('lister');
  const laptop = await new Api(one.baseUrl).login('lister', 'user-password-1');
  const password = await createAppPassword(user.api, 'finder');

  const res = await laptop.api.get('/v1/devices');
  expect(res.status).toBe(200);
  const ids = res.body.items.map((d: { id: string }) => d.id);
  expect(ids.sort()).toEqual([user.deviceId, laptop.deviceId].sort());
  expect(ids).not.toContain(password.deviceId);
  const mine = res.body.items.find((d: { id: string }) => d.id === laptop.deviceId);
  expect(mine).toEqual({ id: laptop.deviceId, name: 'test device', platform: 'linux', createdAt: expect.stringMatching(ISO_MS), lastUsedAt: expect.stringMatching(ISO_MS), current: true });
  expect(res.body.items.find((d: { id: string }) => d.id === user.deviceId).current).toBe(false);
  // Another user sees none of them.
  const other = await (await admin()).createUser('not-lister');
  expect((await other.api.get('/v1/devices')).body.items.map((d: { id: string }) => d.id)).toEqual([other.deviceId]);
  expectError(await new Api(one.baseUrl).get('/v1/devices'), 401, 'UNAUTHORIZED');
});

test('a deleted device\'s tokens get 401 on every gateway at once; other devices keep working', async () => {
  const user = await (await admin()).createUser('retiring');
  const phone = await new Api(one.baseUrl).login('retiring', 'user-password-1');
  const phoneOnTwo = new Api(two.baseUrl, phone.token);
  // Both gateways have the phone's principal cached.
  for (const api of [phone.api, phoneOnTwo]) {
    expect((await api.get('/v1/files')).status).toBe(200);
    expect((await api.get('/v1/files')).status).toBe(200);
  }

  const res = await user.api.delete(`/v1/devices/${phone.deviceId}`);
  expect(res.status).toBe(204);
  expectError(await phone.api.get('/v1/files'), 401, 'UNAUTHORIZED');
  expect(await waitFor(async () => (await phoneOnTwo.get('/v1/files')).status === 401, 2000, 10)).toBe(true);
  expect((await user.api.get('/v1/files')).status).toBe(200);
  expect((await user.api.get('/v1/devices')).body.items.map((d: { id: string }) => d.id)).toEqual([user.deviceId]);
  // Signing in again on it is refused: it is no longer a registered device.
  expect((await new Api(one.baseUrl).post('/v1/auth/login', { username: 'retiring', password: 'user-password-1', deviceId: phone.deviceId })).status).toBe(400);
});

test('deleting an app password\'s device ends the app password on every gateway', async () => {
  const user = await (await admin()).createUser('dav-retiring');
  const password = await createAppPassword(user.api, 'rclone');
  const onTwo = new DavClient(two.baseUrl, basic('dav-retiring', password.password));
  expect((await onTwo.propfind('/dav/', '0')).status).toBe(207);
  expect((await onTwo.propfind('/dav/', '0')).status).toBe(207);

  expect((await user.api.delete(`/v1/devices/${password.deviceId}`)).status).toBe(204);
  expect(await waitFor(async () => (await onTwo.propfind('/dav/', '0')).status === 401, 2000, 10)).toBe(true);
  expect((await new DavClient(one.baseUrl, basic('dav-retiring', password.password)).propfind('/dav/', '0')).status).toBe(401);
  expect((await user.api.get('/v1/app-passwords')).body.items).toEqual([]);
});

test('another user\'s device, an unknown id or a malformed one: 404, and nothing changes', async () => {
  const user = await (await admin()).createUser('owner-of-one');
  const other = await (await admin()).createUser('someone-else');
  expectError(await other.api.delete(`/v1/devices/${user.deviceId}`), 404, 'NOT_FOUND');
  expectError(await other.api.delete(`/v1/devices/${'0'.repeat(32)}`), 404, 'NOT_FOUND');
  expectError(await other.api.delete('/v1/devices/not-an-id'), 404, 'NOT_FOUND');
  expect((await user.api.get('/v1/files')).status).toBe(200);
  expect((await env.db('devices').where({ id: user.deviceId }).first()).deleted_at).toBeNull();
});
