import { randomBytes } from 'node:crypto';
import { Api } from '../support/client';
import { makeFolders } from '../support/links';
import { startStack, type TestStack } from '../support/stack';

/**
 * S3_DOWNLOADS=redirect hands the owner's whole downloads to the store (302); a share link's download
 * stays the gateway's own answer, with its headers, and counts as a download.
 */
describe('share links with S3_DOWNLOADS=redirect', () => {
  let stack: TestStack;
  let api: Api;
  const body = randomBytes(300_000);
  let fileId: string;
  let folderId: string;

  beforeAll(async () => {
    stack = await startStack({ STORAGE_DRIVER: 's3', S3_DOWNLOADS: 'redirect' });
    ({ api } = await stack.admin.createUser('redirected'));
    folderId = (await makeFolders(api, ['out/']))['out/']!;
    const up = await api.upload({ folderId }, { name: 'photo.jpg', content: body, type: 'image/jpeg' });
    expect(up.status).toBe(201);
    fileId = up.body.id;
  });

  afterAll(async () => {
    await stack?.close();
  });

  const unfollowed = (path: string, headers: Record<string, string> = {}) => fetch(api.baseUrl + path, { headers, redirect: 'manual' });

  test("the owner's whole download is a 302 to the store", async () => {
    const own = await unfollowed(`/v1/files/${fileId}/content`, { authorization: `Bearer ${api.token}` });
    expect(own.status).toBe(302);
    expect(own.headers.get('location')).toMatch(/^http/);
  });

  test.each([
    ['a file link', () => ({ resourceId: fileId }), ''],
    ['a folder link', () => ({ resourceId: folderId }), 'fileId'],
  ])("%s: 200 with the bytes and the gateway's headers, counted as a download", async (_label, create, param) => {
    const link = await api.post('/v1/links', create());
    expect(link.status).toBe(201);
    const query = param ? `?${param}=${fileId}` : '';
    const res = await unfollowed(`/v1/public/${link.body.token}/content${query}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="?photo.jpg"?/);
    expect(res.headers.get('content-type')).toBe('image/jpeg');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{64}"$/);
    expect(Buffer.from(await res.arrayBuffer()).equals(body)).toBe(true);
    expect((await api.get(`/v1/links/${link.body.id}`)).body.downloads).toBe(1);
  });

  test('a link with a download limit is used up by proxied downloads, never by a URL handed out', async () => {
    const link = (await api.post('/v1/links', { resourceId: fileId, maxDownloads: 1 })).body;
    const first = await unfollowed(`/v1/public/${link.token}/content`);
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    expect((await unfollowed(`/v1/public/${link.token}/content`)).status).toBe(404);
  });

  test('the archive of a folder link is streamed by the gateway from the store', async () => {
    const link = (await api.post('/v1/links', { resourceId: folderId })).body;
    const res = await unfollowed(`/v1/public/${link.token}/archive`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/zip');
    const zip = Buffer.from(await res.arrayBuffer());
    // Stored, not deflated: the file's bytes appear whole inside the archive.
    expect(zip.indexOf(body)).toBeGreaterThan(0);
  });
});
