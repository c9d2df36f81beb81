import { newId } from '../../shared/ids';
import { UsageRepository } from '../../shared/quota/usage.repository';
import { Api } from '../support/client';
import { expectError } from '../support/fixtures';
import { rawRequest } from '../support/raw.http';
import { startStack, type TestStack } from '../support/stack';
import { TusRaw } from '../support/tus';

const DEFAULT_QUOTA = 5000;

let stack: TestStack;
let admin: Api;

beforeAll(async () => {
  stack = await startStack({ DEFAULT_QUOTA_BYTES: String(DEFAULT_QUOTA), MAX_VERSIONS: '50' });
  admin = stack.admin;
});

afterAll(async () => {
  await stack?.close();
});

/** A new user with the given quota (null: none). */
async function userWithQuota(quotaBytes: number | null) {
  const user = await admin.createUser(`u${newId().slice(0, 12)}`);
  const res = await admin.patch(`/v1/users/${user.userId}`, { quotaBytes });
  expect(res.status).toBe(200);
  return user;
}

const usageOf = async (api: Api) => (await api.get('/v1/users/me/usage')).body;
const upload = (api: Api, bytes: number, name = `f-${newId()}.bin`) => api.upload({}, { name, content: Buffer.alloc(bytes, 1) });
const put = (api: Api, id: string, bytes: number, headers: Record<string, string> = {}) =>
  api.request('PUT', `/v1/files/${id}/content`, { body: Buffer.alloc(bytes, 2), headers });

/** The counters recomputed from the rows agree with the stored ones. */
async function countersExact(userId: string): Promise<void> {
  expect(await new UsageRepository(stack.env.db).differences(userId)).toEqual([]);
}

describe('administration', () => {
  test('a new user gets DEFAULT_QUOTA_BYTES, shown in the admin representation and the usage', async () => {
    const username = `d${newId().slice(0, 12)}`;
    const created = await admin.post('/v1/users', { username, password: 'user-password-1' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ username, quotaBytes: DEFAULT_QUOTA });
    const { api } = await new Api(stack.gateway.baseUrl).login(username, 'user-password-1');
    expect(await usageOf(api)).toEqual({ quotaBytes: DEFAULT_QUOTA, usedBytes: 0, filesBytes: 0, trashBytes: 0, versionsBytes: 0, uploadsBytes: 0 });
  });

  test('PATCH /users/:id sets or lifts the quota and answers the admin representation', async () => {
    const user = await admin.createUser(`p${newId().slice(0, 12)}`);
    const set = await admin.patch(`/v1/users/${user.userId}`, { quotaBytes: 1234 });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ id: user.userId, username: expect.any(String), email: null, isAdmin: false, createdAt: expect.any(String), quotaBytes: 1234 });
    expect((await admin.get(`/v1/users/${user.userId}/usage`)).body).toMatchObject({ quotaBytes: 1234, usedBytes: 0 });
    const lifted = await admin.patch(`/v1/users/${user.userId}`, { quotaBytes: null });
    expect(lifted.body.quotaBytes).toBeNull();
    expect((await usageOf(user.api)).quotaBytes).toBeNull();
  });

  test.each([
    ['a negative quota', { quotaBytes: -1 }],
    ['a fraction', { quotaBytes: 1.5 }],
    ['a string', { quotaBytes: '100' }],
    ['another member', { quotaBytes: 10, isAdmin: true }],
    ['no member', {}],
    ['a number beyond 2^53', '{"quotaBytes": 9007199254740993}'],
  ])('PATCH /users/:id with %s: 400', async (_title, body) => {
    const user = await admin.createUser(`b${newId().slice(0, 12)}`);
    expectError(await admin.patch(`/v1/users/${user.userId}`, body), 400, 'INVALID_REQUEST');
  });

  test('only admins set quotas and read other users\' usage; an unknown or deleted user is 404', async () => {
    const user = await admin.createUser(`n${newId().slice(0, 12)}`);
    expectError(await user.api.patch(`/v1/users/${user.userId}`, { quotaBytes: null }), 403, 'FORBIDDEN');
    expectError(await user.api.get(`/v1/users/${user.userId}/usage`), 403, 'FORBIDDEN');
    expectError(await admin.patch(`/v1/users/${newId()}`, { quotaBytes: 1 }), 404, 'NOT_FOUND');
    expectError(await admin.get(`/v1/users/${newId()}/usage`), 404, 'NOT_FOUND');
    expect((await admin.delete(`/v1/users/${user.userId}`)).status).toBe(204);
    expectError(await admin.patch(`/v1/users/${user.userId}`, { quotaBytes: 1 }), 404, 'NOT_FOUND');
  });

  test('the metrics show stored bytes by kind and quota refusals by reason, with no user label', async () => {
    const { api } = await userWithQuota(10);
    expect((await upload(api, 4)).status).toBe(201);
    expectError(await upload(api, 11), 507, 'QUOTA_EXCEEDED');
    const text = (await admin.get('/metrics')).text;
    expect(text).toMatch(/filesync_stored_bytes\{kind="files"[^}]*\} [1-9]/);
    expect(text).toMatch(/filesync_stored_bytes\{kind="versions"[^}]*\} \d+/);
    expect(text).toMatch(/filesync_quota_refusals_total\{reason="stored_bytes"[^}]*\} [1-9]/);
    expect(text).not.toMatch(/filesync_(stored_bytes|quota_refusals_total)\{[^}]*user/);
  });
});

describe('every path moves bytes between the counters', () => {
  test('upload, replace, delete, restore and purge; each figure exact once the request answered', async () => {
    const { api, userId } = await userWithQuota(null);
    const a = (await upload(api, 100)).body;
    const b = (await upload(api, 50)).body;
    expect(await usageOf(api)).toMatchObject({ usedBytes: 150, filesBytes: 150 });

    expect((await put(api, a.id, 30)).status).toBe(200);
    expect(await usageOf(api)).toMatchObject({ usedBytes: 180, filesBytes: 80, versionsBytes: 100 });

    expect((await api.delete(`/v1/files/${b.id}`)).status).toBe(200);
    expect(await usageOf(api)).toMatchObject({ filesBytes: 30, trashBytes: 50, versionsBytes: 100 });

    expect((await api.post(`/v1/trash/${b.id}/restore`)).status).toBe(200);
    expect(await usageOf(api)).toMatchObject({ filesBytes: 80, trashBytes: 0 });

    expect((await api.delete(`/v1/files/${a.id}`)).status).toBe(200);
    expect(await usageOf(api)).toMatchObject({ filesBytes: 50, trashBytes: 30, versionsBytes: 100 });

    // Purging a file purges its versions.
    expect((await api.delete(`/v1/trash/${a.id}`)).status).toBe(204);
    expect(await usageOf(api)).toEqual({ quotaBytes: null, usedBytes: 50, filesBytes: 50, trashBytes: 0, versionsBytes: 0, uploadsBytes: 0 });
    await countersExact(userId);
  });

  test('a sync delete of a folder moves its files to the trash counter; a sync-created file holds nothing', async () => {
    const { api, userId } = await userWithQuota(null);
    const folder = newId();
    const empty = newId();
    const ops = [
      { opId: 1, type: 'create', resourceId: folder, payload: { resourceType: 'folder', name: 'dir', parentId: null } },
      { opId: 2, type: 'create', resourceId: empty, payload: { resourceType: 'file', name: 'declared.bin', parentId: folder, size: 999 } },
    ];
    expect((await api.post('/v1/sync/ops', { ops })).body.failed).toBeNull();
    expect((await api.upload({ folderId: folder }, { name: 'in.bin', content: Buffer.alloc(70) })).status).toBe(201);
    expect(await usageOf(api)).toMatchObject({ usedBytes: 70, filesBytes: 70 });

    expect((await api.post('/v1/sync/ops', { ops: [{ opId: 3, type: 'delete', resourceId: folder }] })).body.failed).toBeNull();
    expect(await usageOf(api)).toMatchObject({ usedBytes: 70, filesBytes: 0, trashBytes: 70 });
    await countersExact(userId);
  });

  test('a resumable upload holds its Upload-Length from creation; termination releases it, completion turns it into files', async () => {
    const { api, userId } = await userWithQuota(1000);
    const tus = new TusRaw(api);
    const dropped = await tus.start(400, { name: 'dropped.bin' });
    expect(await usageOf(api)).toMatchObject({ uploadsBytes: 400, usedBytes: 400 });
    expect((await tus.delete(dropped)).status).toBe(204);
    expect(await usageOf(api)).toMatchObject({ uploadsBytes: 0, usedBytes: 0 });

    const kept = await tus.start(300, { name: 'kept.bin' });
    expect((await tus.patch(kept, 0, Buffer.alloc(300, 7))).status).toBe(200);
    expect(await usageOf(api)).toMatchObject({ uploadsBytes: 0, filesBytes: 300, usedBytes: 300 });
    await countersExact(userId);
  });
});

describe('enforcement', () => {
  test('a write that does not fit is 507 QUOTA_EXCEEDED with the figures, and leaves nothing', async () => {
    const { api, userId } = await userWithQuota(1000);
    expect((await upload(api, 600)).status).toBe(201);
    const filesBefore = await stack.env.db('resources').where({ user_id: userId }).count({ n: '*' });

    const refused = await upload(api, 500);
    expectError(refused, 507, 'QUOTA_EXCEEDED');
    expect(refused.body.error.details).toEqual({ quotaBytes: 1000, usedBytes: 600, neededBytes: 500 });
    expect(await stack.env.db('resources').where({ user_id: userId }).count({ n: '*' })).toEqual(filesBefore);
    expect((await upload(api, 400)).status).toBe(201);
    expect(await usageOf(api)).toMatchObject({ usedBytes: 1000 });
    expectError(await new TusRaw(api).create(1, { name: 'one.bin' }), 507, 'QUOTA_EXCEEDED');
    await countersExact(userId);
  });

  test('a request whose Content-Length cannot fit is refused before its body is read', async () => {
    const { api, token } = await userWithQuota(1000);
    const file = (await upload(api, 100)).body;
    const declared = 50 * 1024 * 1024;
    for (const [method, path, type] of [
      ['PUT', `/v1/files/${file.id}/content`, 'application/octet-stream'],
      ['POST', '/v1/files', 'multipart/form-data; boundary=xyz'],
    ]) {
      // Headers only: an answer while no byte of the body was sent proves it was not waited for.
      const res = await rawRequest(stack.gateway.baseUrl, method!, path!, {
        headers: { authorization: `Bearer ${token}`, 'content-type': type!, 'content-length': declared },
        endBody: false,
      });
      expect(res.status).toBe(507);
      expect(res.sent).toBe(0);
      expect(res.body.error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quotaBytes: 1000, usedBytes: 100, neededBytes: declared } });
    }
  });

  test('the oldest versions are dropped first to make room; the content just replaced is dropped last', async () => {
    const { api, userId } = await userWithQuota(1000);
    const a = (await upload(api, 300)).body;
    expect((await put(api, a.id, 300)).status).toBe(200); // version v1 (300), files 300
    expect((await put(api, a.id, 300)).status).toBe(200); // version v2 (300), versions 600: used 900
    const before = (await api.get(`/v1/files/${a.id}/versions`)).body.items as Array<{ id: string }>;
    expect(before).toHaveLength(2);

    // 200 more bytes of files: 1100 in all, so the oldest version (300) goes.
    expect((await upload(api, 200)).status).toBe(201);
    const after = (await api.get(`/v1/files/${a.id}/versions`)).body.items as Array<{ id: string }>;
    expect(after.map((v) => v.id)).toEqual([before[0]!.id]);
    expect(await usageOf(api)).toMatchObject({ usedBytes: 800, versionsBytes: 300, filesBytes: 500 });

    // A replacement that leaves no room for any version keeps none, not even the one it replaced.
    expect((await put(api, a.id, 800)).status).toBe(200);
    expect((await api.get(`/v1/files/${a.id}/versions`)).body.total).toBe(0);
    expect(await usageOf(api)).toMatchObject({ usedBytes: 1000, versionsBytes: 0, filesBytes: 1000 });
    await countersExact(userId);
  });

  test('a quota lowered below usage deletes nothing: writes that add bytes are refused, everything else works', async () => {
    const { api, userId } = await userWithQuota(null);
    const kept = (await upload(api, 400, 'kept.bin')).body;
    const other = (await upload(api, 300, 'other.bin')).body;
    expect((await admin.patch(`/v1/users/${userId}`, { quotaBytes: 100 })).status).toBe(200);
    expect(await usageOf(api)).toMatchObject({ quotaBytes: 100, usedBytes: 700, filesBytes: 700 });

    expectError(await upload(api, 1), 507, 'QUOTA_EXCEEDED');
    expectError(await put(api, kept.id, 10), 507, 'QUOTA_EXCEEDED');
    expectError(await new TusRaw(api).create(10, { name: 'x.bin' }), 507, 'QUOTA_EXCEEDED');

    expect((await api.get(`/v1/files/${kept.id}/content`)).status).toBe(200);
    const renamed = await api.post('/v1/sync/ops', { ops: [{ opId: 1, type: 'update', resourceId: kept.id, payload: { name: 'renamed.bin' } }] });
    expect(renamed.body.failed).toBeNull();
    expect((await api.delete(`/v1/files/${other.id}`)).status).toBe(200);
    expect((await api.post(`/v1/trash/${other.id}/restore`)).status).toBe(200);
    expect((await api.delete(`/v1/files/${other.id}`)).status).toBe(200);
    expect((await api.delete(`/v1/trash/${other.id}`)).status).toBe(204);
    expect(await usageOf(api)).toMatchObject({ usedBytes: 400, filesBytes: 400, trashBytes: 0 });
    await countersExact(userId);
  });
});
