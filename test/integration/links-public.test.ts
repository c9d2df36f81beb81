import { createHash } from 'node:crypto';
import { Api } from '../support/client';
import { DRIVERS, onDriver } from '../support/drivers';
import { makeFolders, unzipEntries } from '../support/links';
import { startStack, type TestStack } from '../support/stack';

const GONE = { error: { code: 'NOT_FOUND', message: 'no such link, or it is no longer available' } };

/** The public side of share links on each content driver (docs/LINKS.md). */
describe.each(DRIVERS)('share links, public side, on the %s driver', (driver) => {
  let stack: TestStack;
  let api: Api;
  let other: Api;
  let anon: Api;
  let userId: string;
  let folders: Record<string, string>;
  const files: Record<string, string> = {};

  const link = async (body: Record<string, unknown>) => {
    const res = await api.post('/v1/links', body);
    expect(res.status).toBe(201);
    return res.body as { id: string; token: string; deviceId: string };
  };

  beforeAll(async () => {
    stack = await startStack(onDriver(driver));
    let session;
    ({ api, userId, ...session } = await stack.admin.createUser('sharer'));
    expect(session.deviceId).toBeDefined();
    ({ api: other } = await stack.admin.createUser('outsider'));
    anon = new Api(api.baseUrl);
    folders = await makeFolders(api, ['shared/', 'shared/sub/', 'shared/sub/deep/', 'private/']);
    for (const [p, content] of [
      ['shared/a.txt', 'alpha'],
      ['shared/sub/b.txt', 'bravo'],
      ['shared/sub/deep/c.txt', 'charlie'],
      ['private/secret.txt', 'secret'],
    ] as const) {
      const folder = p.slice(0, p.lastIndexOf('/') + 1);
      const res = await api.upload({ folderId: folders[folder]! }, { name: p.slice(folder.length), content, type: 'text/plain' });
      expect(res.status).toBe(201);
      files[p] = res.body.id;
    }
  });

  afterAll(async () => {
    await stack?.close();
  });

  test('metadata: the terms and the resource, nothing of the owner, no-store and no-referrer on success and on 404', async () => {
    const l = await link({ resourceId: files['shared/a.txt'] });
    const res = await anon.get(`/v1/public/${l.token}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ access: 'read', hasPassword: false, expiresAt: null, resource: { type: 'file', name: 'a.txt', size: 5 } });
    expect(res.text).not.toContain(userId);
    expect(res.text).not.toContain('sharer');
    for (const r of [res, await anon.get('/v1/public/AAAAAAAAAAAAAAAAAAAAAAAA'), await anon.get(`/v1/public/${l.token}/nothing-here`)]) {
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(r.headers.get('referrer-policy')).toBe('no-referrer');
    }
    expect((await anon.get('/v1/public/AAAAAAAAAAAAAAAAAAAAAAAA')).body).toEqual(GONE);
  });

  test('content of a file link: the bytes as an attachment, nosniff, Range, and fileId refused', async () => {
    const l = await link({ resourceId: files['shared/a.txt'] });
    const res = await anon.get(`/v1/public/${l.token}/content`);
    expect(res.status).toBe(200);
    expect(res.text).toBe('alpha');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="?a.txt"?/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('etag')).toBe(`"${createHash('sha256').update('alpha').digest('hex')}"`);
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const part = await anon.get(`/v1/public/${l.token}/content`, { range: 'bytes=1-2' });
    expect(part.status).toBe(206);
    expect(part.text).toBe('lp');
    expect((await anon.get(`/v1/public/${l.token}/content?fileId=${files['shared/a.txt']}`)).status).toBe(400);
    // Two responses from byte 0; the range from 1 counted nothing.
    expect((await api.get(`/v1/links/${l.id}`)).body.downloads).toBe(1);
  });

  test('folder listing and content stay inside the linked subtree', async () => {
    const l = await link({ resourceId: folders['shared/sub/'] });
    const top = await anon.get(`/v1/public/${l.token}/items`);
    expect(top.status).toBe(200);
    expect(top.body).toMatchObject({ total: 2, limit: 50, offset: 0 });
    expect(top.body.items[0]).toMatchObject({ type: 'folder', id: folders['shared/sub/deep/'], name: 'deep' });
    expect(top.body.items[1]).toMatchObject({ type: 'file', id: files['shared/sub/b.txt'], name: 'b.txt', size: 5, mimeType: 'text/plain' });
    expect(top.body.items[0].size).toBeUndefined();
    const deep = await anon.get(`/v1/public/${l.token}/items?folderId=${folders['shared/sub/deep/']}`);
    expect(deep.body.items.map((i: { name: string }) => i.name)).toEqual(['c.txt']);
    expect((await anon.get(`/v1/public/${l.token}/content?fileId=${files['shared/sub/deep/c.txt']}`)).text).toBe('charlie');
    // The owner has these, but they are outside the link: the same 404.
    for (const url of [
      `/items?folderId=${folders['shared/']}`,
      `/items?folderId=${folders['private/']}`,
      `/content?fileId=${files['shared/a.txt']}`,
      `/content?fileId=${files['private/secret.txt']}`,
      `/archive?folderId=${folders['private/']}`,
    ]) {
      const res = await anon.get(`/v1/public/${l.token}${url}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual(GONE);
    }
    expect((await anon.get(`/v1/public/${l.token}/content`)).status).toBe(400);
    expect((await anon.get(`/v1/public/${l.token}/items?folderId=nothex`)).status).toBe(400);
    expect((await api.get(`/v1/links/${l.id}`)).body.downloads).toBe(1);
  });

  test('archive: the subtree as a ZIP, paths relative to the folder asked for, one download', async () => {
    const l = await link({ resourceId: folders['shared/'] });
    const res = await fetch(`${api.baseUrl}/v1/public/${l.token}/archive`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/zip');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="?shared.zip"?/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await unzipEntries(Buffer.from(await res.arrayBuffer()))).toEqual({ 'a.txt': 'alpha', 'sub/b.txt': 'bravo', 'sub/deep/c.txt': 'charlie' });
    const sub = await fetch(`${api.baseUrl}/v1/public/${l.token}/archive?folderId=${folders['shared/sub/']}`);
    expect(await unzipEntries(Buffer.from(await sub.arrayBuffer()))).toEqual({ 'b.txt': 'bravo', 'deep/c.txt': 'charlie' });
    expect((await api.get(`/v1/links/${l.id}`)).body.downloads).toBe(2);
  });

  test('archive of many small files and a large one: every entry whole and in name order', async () => {
    const { 'mixed/': mixedId } = await makeFolders(api, ['mixed/'], 400);
    const expected: Record<string, string> = {};
    const large = Array.from({ length: 3 * 1024 }, (_, i) => `line ${String(i).padStart(5, '0')} `.padEnd(1024, '.')).join('');
    for (const [name, content] of [['m-large.txt', large], ...Array.from({ length: 40 }, (_, i) => [`s-${String(i).padStart(2, '0')}.txt`, `small ${i} `.repeat(100 + i)])]) {
      expect((await api.upload({ folderId: mixedId! }, { name: name!, content: content! })).status).toBe(201);
      expected[name!] = content!;
    }
    const l = await link({ resourceId: mixedId! });
    const res = await fetch(`${api.baseUrl}/v1/public/${l.token}/archive`);
    expect(res.status).toBe(200);
    const entries = await unzipEntries(Buffer.from(await res.arrayBuffer()));
    expect(Object.keys(entries)).toEqual(Object.keys(expected).sort());
    expect(entries).toEqual(expected);
  });

  test('maxDownloads: a 304, a 412 and a 416 send no bytes and count no download', async () => {
    const l = await link({ resourceId: files['shared/a.txt'], maxDownloads: 1 });
    const first = await api.get(`/v1/files/${files['shared/a.txt']}`);
    const etag = `"${(first.body as { sha256: string }).sha256}"`;
    const url = `/v1/public/${l.token}/content`;
    expect((await anon.get(url, { 'if-none-match': etag })).status).toBe(304);
    expect((await anon.get(url, { 'if-match': '"0000"' })).status).toBe(412);
    expect((await anon.get(url, { range: 'bytes=100-200' })).status).toBe(416);
    expect((await api.get(`/v1/links/${l.id}`)).body).toMatchObject({ downloads: 0, maxDownloads: 1 });
    expect((await anon.get(url, { 'if-match': etag })).text).toBe('alpha');
    expect((await anon.get(url)).body).toEqual(GONE);
  });

  test('maxDownloads: two racing downloads of the last one, exactly one gets it; then every request is 404', async () => {
    const l = await link({ resourceId: files['shared/a.txt'], maxDownloads: 1 });
    const both = await Promise.all([anon.get(`/v1/public/${l.token}/content`), anon.get(`/v1/public/${l.token}/content`)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 404]);
    expect((await anon.get(`/v1/public/${l.token}`)).body).toEqual(GONE);
    expect((await api.get(`/v1/links/${l.id}`)).body).toMatchObject({ downloads: 1, maxDownloads: 1 });
    expect((await api.patch(`/v1/links/${l.id}`, { maxDownloads: 2 })).status).toBe(200);
    expect((await anon.get(`/v1/public/${l.token}/content`)).text).toBe('alpha');
  });

  test('maxDownloads on a folder: two racing archives of the last one, one whole ZIP and one 404 without a byte of ZIP', async () => {
    const { 'racing/': racingId } = await makeFolders(api, ['racing/'], 401);
    const expected: Record<string, string> = {};
    for (let i = 0; i < 40; i++) {
      const name = `r-${String(i).padStart(2, '0')}.txt`;
      expected[name] = `racing ${i} `.repeat(200 + i);
      expect((await api.upload({ folderId: racingId! }, { name, content: expected[name]! })).status).toBe(201);
    }
    const l = await link({ resourceId: racingId!, maxDownloads: 1 });
    // The archive's first files are read while its download is counted: the loser's reads are dropped.
    const both = await Promise.all([0, 1].map(() => fetch(`${api.baseUrl}/v1/public/${l.token}/archive`)));
    expect(both.map((r) => r.status).sort()).toEqual([200, 404]);
    const won = both.find((r) => r.status === 200)!;
    const lost = both.find((r) => r.status === 404)!;
    expect(await unzipEntries(Buffer.from(await won.arrayBuffer()))).toEqual(expected);
    expect(lost.headers.get('content-type')).toMatch(/^application\/json/);
    expect(lost.headers.get('content-disposition')).toBeNull();
    expect(await lost.json()).toEqual(GONE);
    expect((await api.get(`/v1/links/${l.id}`)).body).toMatchObject({ downloads: 1, maxDownloads: 1 });
    expect((await fetch(`${api.baseUrl}/v1/public/${l.token}/archive`)).status).toBe(404);
  });

  test('password: PASSWORD_REQUIRED until unlocked; the access string works as Bearer or ?access= until the password changes', async () => {
    const l = await link({ resourceId: folders['shared/'], password: 'open sesame' });
    expect((await anon.get(`/v1/public/${l.token}`)).body.hasPassword).toBe(true);
    const locked = await anon.get(`/v1/public/${l.token}/items`);
    expect(locked.status).toBe(401);
    expect(locked.body.error.code).toBe('PASSWORD_REQUIRED');
    const wrong = await anon.post(`/v1/public/${l.token}/unlock`, { password: 'not it at all' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('UNAUTHORIZED');
    const right = await anon.post(`/v1/public/${l.token}/unlock`, { password: 'open sesame' });
    expect(right.status).toBe(200);
    expect(Date.parse(right.body.expiresAt) - Date.now()).toBeLessThanOrEqual(24 * 3600 * 1000);
    const access = right.body.access as string;
    expect((await anon.get(`/v1/public/${l.token}/items`, { authorization: `Bearer ${access}` })).status).toBe(200);
    expect((await anon.get(`/v1/public/${l.token}/content?fileId=${files['shared/a.txt']}&access=${encodeURIComponent(access)}`)).text).toBe('alpha');
    // Another link does not take it.
    const other2 = await link({ resourceId: folders['shared/'], password: 'open sesame' });
    expect((await anon.get(`/v1/public/${other2.token}/items`, { authorization: `Bearer ${access}` })).status).toBe(401);
    await api.patch(`/v1/links/${l.id}`, { password: 'a different one' });
    expect((await anon.get(`/v1/public/${l.token}/items`, { authorization: `Bearer ${access}` })).status).toBe(401);
  });

  test('trash, restore, move, rename, purge, expiry and a deleted device', async () => {
    const [moved] = Object.values(await makeFolders(api, ['movable/'], 100));
    const l = await link({ resourceId: moved! });
    expect((await anon.get(`/v1/public/${l.token}`)).status).toBe(200);
    await api.post('/v1/sync/ops', { ops: [{ opId: 200, type: 'move', resourceId: moved, payload: { parentId: folders['private/'] } }] });
    await api.post('/v1/sync/ops', { ops: [{ opId: 201, type: 'update', resourceId: moved, payload: { name: 'renamed' } }] });
    expect((await anon.get(`/v1/public/${l.token}`)).body.resource).toEqual({ type: 'folder', name: 'renamed' });
    await api.post('/v1/sync/ops', { ops: [{ opId: 202, type: 'delete', resourceId: moved }] });
    expect((await anon.get(`/v1/public/${l.token}`)).body).toEqual(GONE);
    expect((await api.post(`/v1/trash/${moved}/restore`)).status).toBe(200);
    expect((await anon.get(`/v1/public/${l.token}`)).status).toBe(200);
    await api.post('/v1/sync/ops', { ops: [{ opId: 203, type: 'delete', resourceId: moved }] });
    expect((await api.delete(`/v1/trash/${moved}`)).status).toBe(204);
    expect((await api.get(`/v1/links/${l.id}`)).status).toBe(404);
    expect((await anon.get(`/v1/public/${l.token}`)).body).toEqual(GONE);

    const expiring = await link({ resourceId: files['shared/a.txt'], expiresAt: new Date(Date.now() + 1500).toISOString() });
    expect((await anon.get(`/v1/public/${expiring.token}`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1600));
    expect((await anon.get(`/v1/public/${expiring.token}`)).body).toEqual(GONE);
    expect((await api.get(`/v1/links/${expiring.id}`)).status).toBe(200);

    const retired = await link({ resourceId: files['shared/a.txt'] });
    await stack.env.db('devices').where({ id: retired.deviceId }).update({ deleted_at: new Date() });
    expect((await anon.get(`/v1/public/${retired.token}`)).body).toEqual(GONE);
  });

  test('upload links: files land in the folder as the owner, numbered on a clash, with the link device in the feed; reads are 403', async () => {
    const [dropId] = Object.values(await makeFolders(api, ['drop/'], 300));
    const l = await link({ resourceId: dropId!, access: 'upload' });
    const send = (name: string, content: string) => {
      const form = new FormData();
      form.append('file', new Blob([content]), name);
      return anon.request('POST', `/v1/public/${l.token}/files`, { body: form });
    };
    const first = await send('report.pdf', 'one');
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ name: 'report.pdf', size: 3 });
    const racing = await Promise.all([send('report.pdf', 'two'), send('report.pdf', 'three'), send('report.pdf', 'four')]);
    expect(racing.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(racing.map((r) => r.body.name).sort()).toEqual(['report (2).pdf', 'report (3).pdf', 'report (4).pdf']);
    expect((await send('.env', 'x')).body.name).toBe('.env');
    expect((await send('.env', 'y')).body.name).toBe('.env (2)');
    const listed = await api.get(`/v1/files?folderId=${dropId}&limit=100`);
    expect(listed.body.total).toBe(6);
    const changes = await api.get('/v1/sync/changes?limit=1000');
    const report = changes.body.items.find((i: { name: string }) => i.name === 'report.pdf');
    expect(report.deviceId).toBe(l.deviceId);
    for (const url of ['/items', '/content', `/content?fileId=${files['shared/a.txt']}`, '/archive']) {
      const res = await anon.get(`/v1/public/${l.token}${url}`);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    const readLink = await link({ resourceId: dropId! });
    const form = new FormData();
    form.append('file', new Blob(['z']), 'z.txt');
    expect((await anon.request('POST', `/v1/public/${readLink.token}/files`, { body: form })).status).toBe(403);
  });

  test('upload links charge the owner: 507 over the quota and nothing kept', async () => {
    const { api: small, userId: smallId } = await stack.admin.createUser('smallquota');
    expect((await stack.admin.patch(`/v1/users/${smallId}`, { quotaBytes: 10 })).status).toBe(200);
    const [dropId] = Object.values(await makeFolders(small, ['inbox/'], 1));
    const l = (await small.post('/v1/links', { resourceId: dropId, access: 'upload' })).body;
    const form = new FormData();
    form.append('file', new Blob(['x'.repeat(100)]), 'big.bin');
    const res = await anon.request('POST', `/v1/public/${l.token}/files`, { body: form });
    expect(res.status).toBe(507);
    expect(res.body.error.code).toBe('QUOTA_EXCEEDED');
    expect((await small.get(`/v1/files?folderId=${dropId}`)).body.total).toBe(0);
    expect((await other.get(`/v1/public/${l.token}`)).status).toBe(200);
  });
});
