import { Api, type ApiResponse } from '../support/client';
import { makeFolders } from '../support/links';
import { startStack, type TestStack } from '../support/stack';

/**
 * What the public side never does, whatever the answer: reveal its owner, let a response be cached or
 * its URL leak onwards as a Referer. And what the owner's POST /links refuses.
 */
describe('share links: safety of every public answer', () => {
  let stack: TestStack;
  let api: Api;
  let anon: Api;
  let userId: string;
  let folderId: string;
  let fileId: string;

  beforeAll(async () => {
    stack = await startStack({ LOGIN_RATE_LIMIT: '2', LOGIN_ADDRESS_RATE_LIMIT: '100' });
    ({ api, userId } = await stack.admin.createUser('private-person'));
    anon = new Api(api.baseUrl);
    folderId = (await makeFolders(api, ['box/']))['box/']!;
    fileId = (await api.upload({ folderId }, { name: 'f.txt', content: 'file' })).body.id;
  });

  afterAll(async () => {
    await stack?.close();
  });

  const expectSafe = (res: ApiResponse, status: number) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const all = res.text + JSON.stringify([...res.headers.entries()]);
    expect(all).not.toContain(userId);
    expect(all).not.toContain('private-person');
  };

  test('every kind of answer carries no-store and no-referrer and nothing of the owner', async () => {
    const read = (await api.post('/v1/links', { resourceId: folderId, password: 'the password' })).body;
    const upload = (await api.post('/v1/links', { resourceId: folderId, access: 'upload' })).body;
    const open = (await api.post('/v1/links', { resourceId: folderId })).body;
    const t = read.token;

    expectSafe(await anon.get(`/v1/public/${t}`), 200);
    expectSafe(await anon.get(`/v1/public/${t}/items`), 401);
    expectSafe(await anon.post(`/v1/public/${t}/unlock`, { password: 'not the password' }), 401);
    expectSafe(await anon.request('POST', `/v1/public/${t}/unlock`, { json: '{"password":', headers: { 'content-type': 'application/json' } }), 400);
    expectSafe(await anon.request('POST', `/v1/public/${t}/unlock`, { json: JSON.stringify({ password: 'x'.repeat(2 * 1024 * 1024) }) }), 413);
    expectSafe(await anon.post(`/v1/public/${t}/unlock`, {}), 400);
    expectSafe(await anon.get(`/v1/public/${upload.token}/items`), 403);
    expectSafe(await anon.get(`/v1/public/${open.token}/items`), 200);
    expectSafe(await anon.get(`/v1/public/${open.token}/content?fileId=${fileId}`), 200);
    expectSafe(await anon.get(`/v1/public/${open.token}/content?fileId=zz`), 400);
    expectSafe(await anon.get(`/v1/public/${open.token}/content?fileId=${'0'.repeat(32)}`), 404);
    expectSafe(await anon.get('/v1/public/AAAAAAAAAAAAAAAAAAAAAAAA/items'), 404);
    expectSafe(await anon.request('DELETE', `/v1/public/${open.token}`), 404);
    // The per-link limit is 2: the third wrong guess is refused before any check.
    expectSafe(await anon.post(`/v1/public/${t}/unlock`, { password: 'still not it' }), 401);
    expectSafe(await anon.post(`/v1/public/${t}/unlock`, { password: 'nor is this' }), 429);
    const form = new FormData();
    form.append('file', new Blob(['dropped']), 'dropped.txt');
    expectSafe(await anon.request('POST', `/v1/public/${upload.token}/files`, { body: form }), 201);
  });

  test('the access string works as Bearer and as ?access=, also beside a Bearer of the owner', async () => {
    const link = (await api.post('/v1/links', { resourceId: folderId, password: 'another password' })).body;
    const unlocked = await anon.post(`/v1/public/${link.token}/unlock`, { password: 'another password' });
    expect(unlocked.status).toBe(200);
    const access = unlocked.body.access as string;
    expect((await anon.get(`/v1/public/${link.token}/items`, { authorization: `Bearer ${access}` })).status).toBe(200);
    expect((await anon.get(`/v1/public/${link.token}/items?access=${encodeURIComponent(access)}`)).status).toBe(200);
    // A signed-in user following a link in the browser: their own Bearer is not the link's.
    expect((await api.get(`/v1/public/${link.token}/items?access=${encodeURIComponent(access)}`)).status).toBe(200);
    expect((await api.get(`/v1/public/${link.token}/items`)).status).toBe(401);
    expect((await anon.get(`/v1/public/${link.token}/items?access=${encodeURIComponent(access.slice(0, -2))}xx`)).status).toBe(401);
  });

  test.each([
    ['a misspelt member', { expiry: '2099-01-01T00:00:00Z' }],
    ['a member of the Link itself', { downloads: 0 }],
    ['an owner', { userId: 'f'.repeat(32) }],
  ])('POST /links with %s: 400 and no link made', async (_label, extra) => {
    const before = (await api.get(`/v1/links?resourceId=${fileId}`)).body.total;
    const res = await api.post('/v1/links', { resourceId: fileId, ...extra });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
    expect((await api.get(`/v1/links?resourceId=${fileId}`)).body.total).toBe(before);
  });
});
