import type { Api } from '../support/client';
import { startStack, type TestStack } from '../support/stack';

/** The owner's side of share links: create, list, read, change, revoke, and what each refuses. */
describe('share links, owner side', () => {
  let stack: TestStack;
  let api: Api;
  let other: Api;
  let folderId: string;
  let fileId: string;

  beforeAll(async () => {
    stack = await startStack();
    ({ api } = await stack.admin.createUser('linker'));
    ({ api: other } = await stack.admin.createUser('stranger'));
    const ops = await api.post('/v1/sync/ops', {
      ops: [{ opId: 1, type: 'create', resourceId: 'a'.repeat(32), payload: { resourceType: 'folder', name: 'shared' } }],
    });
    expect(ops.status).toBe(200);
    folderId = 'a'.repeat(32);
    fileId = (await api.upload({ folderId }, { name: 'doc.txt', content: 'hello' })).body.id;
  });

  afterAll(async () => {
    await stack?.close();
  });

  test('a read link to a file: 201 with every member, a token of at least 128 bits and its own device', async () => {
    const res = await api.post('/v1/links', { resourceId: fileId });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      resourceId: fileId,
      resourceType: 'file',
      access: 'read',
      hasPassword: false,
      expiresAt: null,
      maxDownloads: null,
      downloads: 0,
    });
    expect(res.body.token).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(res.body.url).toBe(`${api.baseUrl}/s/${res.body.token}`);
    expect(res.body.id).toMatch(/^[0-9a-f]{32}$/);
    const device = await stack.env.db('devices').where({ id: res.body.deviceId }).first();
    expect(device.kind).toBe('link');
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
  });

  test('the password is stored only as an Argon2id hash', async () => {
    const res = await api.post('/v1/links', { resourceId: folderId, password: 'correct horse' });
    expect(res.status).toBe(201);
    expect(res.body.hasPassword).toBe(true);
    const row = await stack.env.db('links').where({ id: res.body.id }).first();
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
    expect(JSON.stringify(res.body)).not.toContain('correct horse');
  });

  test.each([
    ['upload on a file', () => ({ resourceId: fileId, access: 'upload' })],
    ['maxDownloads on an upload link', () => ({ resourceId: folderId, access: 'upload', maxDownloads: 3 })],
    ['expiresAt in the past', () => ({ resourceId: fileId, expiresAt: '2001-01-01T00:00:00.000Z' })],
    ['expiresAt not a timestamp', () => ({ resourceId: fileId, expiresAt: 'tomorrow' })],
    ['a short password', () => ({ resourceId: fileId, password: 'short' })],
    ['maxDownloads 0', () => ({ resourceId: fileId, maxDownloads: 0 })],
    ['maxDownloads as a string', () => ({ resourceId: fileId, maxDownloads: '2' })],
    ['an unknown access', () => ({ resourceId: fileId, access: 'write' })],
    ['no resourceId', () => ({})],
  ])('POST /links with %s: 400', async (_label, body) => {
    const res = await api.post('/v1/links', body());
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
  });

  test("another user's resource, or an unknown one: 404", async () => {
    expect((await other.post('/v1/links', { resourceId: fileId })).status).toBe(404);
    expect((await api.post('/v1/links', { resourceId: 'f'.repeat(32) })).status).toBe(404);
  });

  test('list newest first, narrowed by resource, paged; another user sees none of them', async () => {
    const a = (await api.post('/v1/links', { resourceId: folderId, access: 'upload' })).body;
    const b = (await api.post('/v1/links', { resourceId: folderId })).body;
    const page = await api.get(`/v1/links?resourceId=${folderId}&limit=2`);
    expect(page.status).toBe(200);
    expect(page.body.items.map((l: { id: string }) => l.id)).toEqual([b.id, a.id]);
    expect(page.body.limit).toBe(2);
    expect(page.body.total).toBeGreaterThanOrEqual(3);
    expect((await other.get('/v1/links')).body).toMatchObject({ items: [], total: 0 });
    expect((await other.get(`/v1/links/${a.id}`)).status).toBe(404);
    expect((await other.patch(`/v1/links/${a.id}`, {})).status).toBe(404);
    expect((await other.delete(`/v1/links/${a.id}`)).status).toBe(404);
    expect((await api.get('/v1/links?limit=0')).status).toBe(400);
  });

  test('PATCH changes what it names, {} changes nothing, and anything else is 400 with nothing changed', async () => {
    const link = (await api.post('/v1/links', { resourceId: fileId, maxDownloads: 2 })).body;
    const future = new Date(Date.now() + 3600_000).toISOString();
    const changed = await api.patch(`/v1/links/${link.id}`, { expiresAt: future, password: 'a new password', maxDownloads: null });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ expiresAt: future, hasPassword: true, maxDownloads: null });
    expect((await api.patch(`/v1/links/${link.id}`, {})).body).toEqual(changed.body);
    for (const body of [{ colour: 'red' }, { maxDownloads: 0 }, { expiresAt: '2001-01-01T00:00:00Z' }, { password: 'x' }, { expiresAt: null, bogus: 1 }]) {
      const res = await api.patch(`/v1/links/${link.id}`, body);
      expect(res.status).toBe(400);
    }
    expect((await api.get(`/v1/links/${link.id}`)).body).toEqual(changed.body);
    const removed = await api.patch(`/v1/links/${link.id}`, { password: null, expiresAt: null });
    expect(removed.body).toMatchObject({ hasPassword: false, expiresAt: null });
  });

  test('maxDownloads cannot be set on an upload link', async () => {
    const link = (await api.post('/v1/links', { resourceId: folderId, access: 'upload' })).body;
    expect((await api.patch(`/v1/links/${link.id}`, { maxDownloads: 5 })).status).toBe(400);
  });

  test('DELETE answers 204, retires the device, and the token answers 404 from then on', async () => {
    const link = (await api.post('/v1/links', { resourceId: fileId })).body;
    expect((await api.get(`/v1/public/${link.token}`)).status).toBe(200);
    expect((await api.delete(`/v1/links/${link.id}`)).status).toBe(204);
    expect((await api.get(`/v1/links/${link.id}`)).status).toBe(404);
    expect((await api.delete(`/v1/links/${link.id}`)).status).toBe(404);
    expect((await api.get(`/v1/public/${link.token}`)).status).toBe(404);
    const device = await stack.env.db('devices').where({ id: link.deviceId }).first();
    expect(device.deleted_at).not.toBeNull();
  });

  test("DELETE /v1/devices/:id of a link's device: the link answers 404 from then on; another user cannot", async () => {
    const link = (await api.post('/v1/links', { resourceId: folderId })).body;
    expect((await api.get(`/v1/public/${link.token}/items`)).status).toBe(200);
    expect((await other.delete(`/v1/devices/${link.deviceId}`)).status).toBe(404);
    expect((await api.get(`/v1/public/${link.token}/items`)).status).toBe(200);
    expect((await api.delete(`/v1/devices/${link.deviceId}`)).status).toBe(204);
    for (const path of ['', '/items', `/content?fileId=${fileId}`, '/archive']) {
      const res = await api.get(`/v1/public/${link.token}${path}`);
      expect(res.status).toBe(404);
      expect(res.body.error.message).toBe('no such link, or it is no longer available');
    }
  });
});
