import { newId } from '../../shared/ids';
import type { Api, ApiResponse } from '../support/client';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { expectError, sha256 } from '../support/fixtures';
import type { TestEnv } from '../support/harness';
import { startStack, type TestStack } from '../support/stack';
import { TusRaw } from '../support/tus';

/*
 * Conflicts answer with the current state, resumable uploads that replace
 * content, and the tus limits that protect other users.
 */

const MAX_OPEN = 3;

let env: TestEnv;
describe.each(DRIVERS)('conditional content on the %s driver', (driver) => {
  let stack: TestStack;
  let api: Api;
  let tus: TusRaw;
  let nextOpId = 1;
  let stored: StoredContent;

  beforeAll(async () => {
    stack = await startStack(onDriver(driver, { MAX_OPEN_UPLOADS: String(MAX_OPEN) }));
    ({ env } = stack);
    stored = new StoredContent(env);
    ({ api } = await stack.admin.createUser('conditional'));
    tus = new TusRaw(api);
  });

  afterAll(async () => {
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await stack?.close();
  });

  /** Terminates whatever uploads a test left open, so each test starts with every place free. */
  const open: string[] = [];
  afterEach(async () => {
    for (const location of open.splice(0)) await tus.delete(location);
  });

  async function startUpload(length: number, metadata: Record<string, string | null>, headers: Record<string, string> = {}): Promise<string> {
    const res = await tus.create(length, metadata, headers);
    expect(res.status).toBe(201);
    const location = new URL(res.headers.get('location')!, api.baseUrl).pathname;
    open.push(location);
    return location;
  }

  async function fileWithContent(content: string, name = `f-${newId()}.txt`): Promise<{ id: string; sha: string }> {
    const res = await api.upload({}, { name, content });
    expect(res.status).toBe(201);
    return { id: res.body.id, sha: res.body.sha256 };
  }

  async function fileWithoutContent(): Promise<string> {
    const id = newId();
    const res = await api.post('/v1/sync/ops', { ops: [{ opId: nextOpId++, type: 'create', resourceId: id, payload: { resourceType: 'file', name: `${id}.bin` } }] });
    expect(res.body.failed).toBeNull();
    return id;
  }

  const put = (id: string, body: string, headers: Record<string, string> = {}) => api.request('PUT', `/v1/files/${id}/content`, { body, headers });

  function expectConflict(res: ApiResponse, rev: number, sha: string | null): void {
    expectError(res, 412, 'PRECONDITION_FAILED');
    expect(res.body.error.details).toEqual({ rev, sha256: sha });
  }

  describe('conflicts answer with the current state', () => {
    test('PUT content with a stale If-Match: 412 with the current rev and sha256', async () => {
      const { id } = await fileWithContent('one');
      const second = await put(id, 'two');

      const res = await put(id, 'three', { 'if-match': `"${sha256('one')}"` });

      expectConflict(res, second.body.rev, sha256('two'));
    });

    test('PUT content with If-None-Match: * on a file with content: 412 with its rev and sha256', async () => {
      const { id, sha } = await fileWithContent('present');

      expectConflict(await put(id, 'other', { 'if-none-match': '*' }), 1, sha);
    });

    test('If-Match on a file without content: 412 with sha256 null', async () => {
      const id = await fileWithoutContent();

      expectConflict(await put(id, 'x', { 'if-match': `"${sha256('x')}"` }), 1, null);
    });
  });

  describe('resumable uploads that replace content', () => {
    test('with fileId, name may be left out, and a name given is ignored: tus never renames', async () => {
      const { id } = await fileWithContent('old', 'keeps-its-name.txt');
      const bare = await startUpload(3, { fileId: id });
      const named = await startUpload(3, { fileId: id, name: 'other-name.txt' });

      const first = await tus.patch(bare, 0, Buffer.from('new'));
      const second = await tus.patch(named, 0, Buffer.from('now'));

      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ id, name: 'keeps-its-name.txt', sha256: sha256('new'), rev: 2 });
      expect(second.body).toMatchObject({ id, name: 'keeps-its-name.txt', sha256: sha256('now'), rev: 3 });
    });

    test('If-Match at creation that does not hold: 412 with the current state, and no upload is created', async () => {
      const { id, sha } = await fileWithContent('current');
      const before = await stored.resumableEntries();

      const res = await tus.create(3, { fileId: id }, { 'if-match': `"${sha256('stale')}"` });

      expectConflict(res, 1, sha);
      expect(await stored.resumableEntries()).toEqual(before);
    });

    test('If-None-Match: * at creation on a file that already has content: 412', async () => {
      const { id, sha } = await fileWithContent('taken');

      expectConflict(await tus.create(3, { fileId: id }, { 'if-none-match': '*' }), 1, sha);
    });

    test('If-Match checked again at completion: content replaced meanwhile gives 412 and the bytes are removed', async () => {
      const { id, sha } = await fileWithContent('base');
      const location = await startUpload(4, { fileId: id }, { 'if-match': `"${sha}"` });
      const meanwhile = await put(id, 'elsewhere');

      const res = await tus.patch(location, 0, Buffer.from('mine'));

      expectConflict(res, meanwhile.body.rev, sha256('elsewhere'));
      expect((await api.get(`/v1/files/${id}`)).body.sha256).toBe(sha256('elsewhere'));
      const uploadId = location.split('/').pop()!;
      expect((await stored.resumableEntries()).filter((name) => name.startsWith(uploadId))).toEqual([]);
    });

    test('If-None-Match: * gives content to a file without it, once', async () => {
      const id = await fileWithoutContent();
      const location = await startUpload(5, { fileId: id }, { 'if-none-match': '*' });

      const res = await tus.patch(location, 0, Buffer.from('first'));

      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id, sha256: sha256('first'), size: 5 });
      expectConflict(await tus.create(3, { fileId: id }, { 'if-none-match': '*' }), 2, sha256('first'));
    });
  });

  describe('limits that protect other users', () => {
    test(`at most MAX_OPEN_UPLOADS unfinished uploads per user: the next gets 429 with Retry-After until one finishes or is terminated`, async () => {
      const started: string[] = [];
      for (let i = 0; i < MAX_OPEN; i++) started.push(await startUpload(2, { name: `open-${i}.txt` }));

      const refused = await tus.create(2, { name: 'one-too-many.txt' });
      const someoneElse = await new TusRaw((await stack.admin.createUser('not-limited')).api).create(0, { name: 'empty.txt' });
      await tus.delete(started[0]!);
      const afterTermination = await tus.create(2, { name: 'after-delete.txt' });
      if (afterTermination.status === 201) open.push(new URL(afterTermination.headers.get('location')!, api.baseUrl).pathname);
      const stillFull = await tus.create(2, { name: 'still-full.txt' });
      expect((await tus.patch(started[1]!, 0, Buffer.from('ok'))).status).toBe(200);
      const afterCompletion = await tus.create(2, { name: 'after-completion.txt' });
      if (afterCompletion.status === 201) open.push(new URL(afterCompletion.headers.get('location')!, api.baseUrl).pathname);

      expectError(refused, 429, 'RATE_LIMITED');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(someoneElse.status).toBe(201);
      expect(afterTermination.status).toBe(201);
      expectError(stillFull, 429, 'RATE_LIMITED');
      expect(afterCompletion.status).toBe(201);
    });

    test('Upload-Metadata over 4 KiB: 400, and nothing is created', async () => {
      const before = await stored.resumableEntries();

      const res = await tus.create(2, { name: 'big-meta.txt', relativePath: 'x'.repeat(3200) });

      expectError(res, 400, 'INVALID_REQUEST');
      expect(await stored.resumableEntries()).toEqual(before);
    });

    test('unknown keys are accepted and ignored: neither stored nor echoed; filetype still gives the media type', async () => {
      const location = await startUpload(4, { name: 'uppy.txt', relativePath: 'photos/uppy.txt', filetype: 'text/markdown', extra: null });
      const info = (await stored.resumableInfo(location.split('/').pop()!))!;
      expect(info).toContain('uppy.txt');

      const head = await tus.head(location);
      const done = await tus.patch(location, 0, Buffer.from('text'));

      expect(info).not.toContain('relativePath');
      expect(info).not.toContain('"extra"');
      expect(head.headers.get('upload-metadata')).toBe(`name ${Buffer.from('uppy.txt').toString('base64')}`);
      expect(done.body).toMatchObject({ name: 'uppy.txt', mimeType: 'text/markdown' });
    });

    test.each(['POST', 'HEAD', 'PATCH', 'DELETE', 'OPTIONS'])('a malformed percent-encoding in the URL of a %s: 400 INVALID_REQUEST', async (method) => {
      const location = await startUpload(2, { name: `malformed-${method}.txt` });
      const url = method === 'POST' ? '/v1/uploads?=%ED%A0%80' : `${location}?=%ED%A0%80`;
      const headers: Record<string, string> = { 'tus-resumable': '1.0.0', 'upload-length': '2', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' };

      const res = await api.request(method, url, { headers, body: method === 'PATCH' ? 'ab' : undefined });
      const inPath = await api.request(method, method === 'POST' ? '/v1/uploads/%ED%A0%80' : `${location}%ED%A0%80`, { headers });

      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      if (method !== 'HEAD') expectError(res, 400, 'INVALID_REQUEST');
      expect(inPath.status).toBe(400);
      if (method !== 'HEAD') expectError(inPath, 400, 'INVALID_REQUEST');
    });
  });
});
