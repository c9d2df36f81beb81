import { randomBytes } from 'node:crypto';
import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import {
  countRows,
  expectError,
  HEX32,
  insertFile,
  insertFolder,
  ISO_MS,
  multipartBody,
  sha256,
  startPartialUpload,
  waitFor,
  type RawPart,
} from '../support/fixtures';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

const LIMIT = 1024;

describe.each(DRIVERS)('uploads on the %s driver', (driver) => {
  let env: TestEnv;
  let gateway: RunningGateway;
  let api: Api;
  let userId: string;
  let deviceId: string;
  let token: string;
  let stored: StoredContent;

  beforeAll(async () => {
    env = await createTestEnv(onDriver(driver, { MAX_UPLOAD_BYTES: String(LIMIT) }));
    stored = new StoredContent(env);
    gateway = await startGateway(env);
    const { api: admin } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
    ({ api, userId, deviceId, token } = await admin.createUser('uploader'));
  });

  afterAll(async () => {
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await gateway.close();
    await env.dropAll();
  });

  /** What an upload may leave behind: everything in the store (.staging included) and resource rows. */
  const snapshot = async () => ({ files: await stored.everything(), rows: await countRows(env.db, 'resources') });
  const rowOf = (id: string) => env.db('resources').where({ id }).first();
  const upload = (name: string, content: Buffer | string = 'content', fields: Record<string, string> = {}, type = 'text/plain') =>
    api.upload(fields, { name, content, type });
  const rawUpload = (parts: RawPart[]) => {
    const { boundary, body } = multipartBody(parts);
    return api.request('POST', '/v1/files', { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
  };

  describe('POST /v1/files', () => {
    test('stores the bytes under the key <deviceId>/<id>.<ext> and returns 201 with the File representation', async () => {
      const before = await snapshot();
      const content = 'hello, world';

      const res = await upload('notes.txt', content);

      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        id: expect.stringMatching(HEX32),
        name: 'notes.txt',
        size: content.length,
        mimeType: 'text/plain',
        folderId: '',
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: res.body.createdAt,
      });
      const id: string = res.body.id;
      const row = await rowOf(id);
      expect(row).toMatchObject({
        user_id: userId,
        parent_id: null,
        type: 'file',
        name: 'notes.txt',
        extension: 'txt',
        storage_key: `${deviceId}/${id}.txt`,
        content_sha256: sha256(content),
        deleted_at: null,
      });
      expect(Number(row.size_bytes)).toBe(content.length);
      expect(await stored.text(`${deviceId}/${id}.txt`)).toBe(content);
    // docs/OPERATIONS.md, "Content on S3": the object is <S3_PREFIX><deviceId>/<resourceId>.<ext>.
    if (driver === 's3') expect(await stored.objectKeys()).toContain(`${env.config.s3!.prefix}${deviceId}/${id}.txt`);
      expect(await snapshot()).toEqual({ files: [...before.files, `${deviceId}/${id}.txt`].sort(), rows: before.rows + 1 });
    });

    test('the name field overrides the uploaded file name', async () => {
      const res = await upload('original.txt', 'x', { name: 'renamed.md' });

      expect(res.status).toBe(201);
      expect(res.body.name).toBe('renamed.md');
      expect(await rowOf(res.body.id)).toMatchObject({ name: 'renamed.md', extension: 'md', storage_key: `${deviceId}/${res.body.id}.md` });
    });

    test('a client-chosen id becomes the resource id', async () => {
      const id = newId();

      const res = await upload('chosen.txt', 'x', { id });

      expect(res.status).toBe(201);
      expect(res.body.id).toBe(id);
      expect(await rowOf(id)).toMatchObject({ name: 'chosen.txt', user_id: userId });
    });

    test('with folderId the file is created inside that folder and listed there', async () => {
      const folder = await insertFolder(env.db, userId, 'inbox');

      const res = await upload('in-folder.txt', 'x', { folderId: folder });

      expect(res.status).toBe(201);
      expect(res.body.folderId).toBe(folder);
      expect((await rowOf(res.body.id)).parent_id).toBe(folder);
      expect((await api.get(`/v1/files?folderId=${folder}`)).body.items.map((i: { id: string }) => i.id)).toEqual([res.body.id]);
    });

    test('an empty folderId uploads to the root', async () => {
      const res = await upload('rooted.txt', 'x', { folderId: '' });

      expect(res.status).toBe(201);
      expect(res.body.folderId).toBe('');
      expect((await rowOf(res.body.id)).parent_id).toBeNull();
    });

    test.each([
      ['Archive.TAR.GZ', 'gz'],
      ['noext', null],
      ['.hidden', null],
      ['trailing.', null],
      ['weird.p-d', null],
      ['long.abcdefghijklmnopq', null],
      ['longest.ABCDEFGHIJKLMNOP', 'abcdefghijklmnop'],
    ])('a file named %j is stored with extension %j', async (name, ext) => {
      const res = await upload(name, 'x');

      expect(res.status).toBe(201);
      const key = `${deviceId}/${res.body.id}${ext ? `.${ext}` : ''}`;
      expect(await rowOf(res.body.id)).toMatchObject({ extension: ext, storage_key: key });
      expect(await stored.text(key)).toBe('x');
    });

    test('the stored extension comes from the resource name, not from the uploaded file name', async () => {
      const res = await upload('evil.exe', 'x', { name: 'report.pdf' });

      expect(res.status).toBe(201);
      expect((await rowOf(res.body.id)).storage_key).toBe(`${deviceId}/${res.body.id}.pdf`);
    });

    test.each([
      ['a declared type is kept', 'data.bin', 'application/pdf', 'application/pdf'],
      ['application/octet-stream is looked up from the extension', 'photo.png', 'application/octet-stream', 'image/png'],
      ['a declared text/plain is kept even for a known extension', 'plain-photo.png', 'text/plain', 'text/plain'],
      ['a declared type loses its parameters', 'page.bin', 'Text/HTML; charset=utf-8', 'text/html'],
      ['an unknown extension keeps application/octet-stream', 'blob.zzzq', 'application/octet-stream', 'application/octet-stream'],
    ])('mimeType: %s', async (_label, name, declared, expected) => {
      const res = await upload(name, 'x', {}, declared);

      expect(res.status).toBe(201);
      expect(res.body.mimeType).toBe(expected);
      expect((await rowOf(res.body.id)).mime_type).toBe(expected);
    });

    test('mimeType: a part without Content-Type is looked up from the extension', async () => {
      const res = await rawUpload([{ name: 'file', filename: 'diagram.png', content: 'x' }]);

      expect(res.status).toBe(201);
      expect(res.body.mimeType).toBe('image/png');
    });

    test('a name given in NFD is stored in NFC', async () => {
      const res = await upload('upload.txt', 'x', { name: 'cafe\u0301.txt' });

      expect(res.status).toBe(201);
      expect(res.body.name).toBe('caf\u00e9.txt');
      expect((await rowOf(res.body.id)).name).toBe('caf\u00e9.txt');
    });

    test('an uploaded file name in NFD is stored in NFC', async () => {
      const res = await rawUpload([{ name: 'file', filename: 'e\u0301t\u00e9.txt', contentType: 'text/plain', content: 'x' }]);

      expect(res.status).toBe(201);
      expect(res.body.name).toBe('\u00e9t\u00e9.txt');
    });

    test('a name of 255 characters is accepted', async () => {
      const name = `${'n'.repeat(251)}.txt`;

      const res = await upload('x.txt', 'x', { name });

      expect(res.status).toBe(201);
      expect((await rowOf(res.body.id)).name).toBe(name);
    });

    test.each([
      ['contains a slash', 'a/b.txt'],
      ['contains a NUL', 'nul\u0000.txt'],
      ['contains a control character', 'bell\u0007.txt'],
      ['contains a tab', 'tab\there.txt'],
      ['contains DEL', 'del\u007f.txt'],
      ['contains a C1 control character', 'c1\u0085.txt'],
      ['is "."', '.'],
      ['is ".."', '..'],
      ['has 256 characters', 'x'.repeat(256)],
    ])('a name that %s gives 400 INVALID_REQUEST and leaves nothing on disk or in the database', async (_label, name) => {
      const before = await snapshot();

      const res = await upload('ok.txt', 'x', { name });

      expectError(res, 400, 'INVALID_REQUEST');
      expect(await snapshot()).toEqual(before);
    });

    describe('name uniqueness', () => {
      test('a name taken by an active sibling gives 409 NAME_CONFLICT and leaves nothing new', async () => {
        expect((await upload('taken.txt', 'first')).status).toBe(201);
        const before = await snapshot();

        const res = await upload('taken.txt', 'second');

        expectError(res, 409, 'NAME_CONFLICT');
        expect(await snapshot()).toEqual(before);
      });

      test('names are compared after NFC: an NFD spelling of a taken name conflicts', async () => {
        expect((await upload('x.txt', 'x', { name: 'r\u00e9sum\u00e9.txt' })).status).toBe(201);

        const res = await upload('x.txt', 'x', { name: 're\u0301sume\u0301.txt' });

        expectError(res, 409, 'NAME_CONFLICT');
      });

      test('names are compared exactly: case and trailing spaces make different names', async () => {
        const results = [];
        for (const name of ['Readme.md', 'readme.md', 'notes', 'notes ']) results.push((await upload('x', 'x', { name })).status);

        expect(results).toEqual([201, 201, 201, 201]);
      });

      test('the same name may be used in two different folders', async () => {
        const [a, b] = [await insertFolder(env.db, userId, 'left'), await insertFolder(env.db, userId, 'right')];

        const first = await upload('twin.txt', 'x', { folderId: a });
        const second = await upload('twin.txt', 'x', { folderId: b });

        expect([first.status, second.status]).toEqual([201, 201]);
      });

      test('a soft-deleted file does not hold its name', async () => {
        const first = await upload('reused.txt', 'old');
        expect((await api.delete(`/v1/files/${first.body.id}`)).status).toBe(200);

        const second = await upload('reused.txt', 'new');

        expect(second.status).toBe(201);
        expect(second.body.id).not.toBe(first.body.id);
        expect((await rowOf(first.body.id)).deleted_at).toBeInstanceOf(Date);
      });
    });

    describe('the sha256 field (a digest of the file)', () => {
      test('a matching sha256 is accepted, in either case, before or after the file part', async () => {
        const content = 'digested upload';
        const before = await rawUpload([
          { name: 'sha256', content: sha256(content).toUpperCase() },
          { name: 'file', filename: 'before.txt', contentType: 'text/plain', content },
        ]);
        const after = await rawUpload([
          { name: 'file', filename: 'after.txt', contentType: 'text/plain', content },
          { name: 'sha256', content: sha256(content) },
        ]);

        expect([before.status, after.status]).toEqual([201, 201]);
        expect(after.body.sha256).toBe(sha256(content));
      });

      test.each([
        ['does not match the bytes', sha256('other bytes')],
        ['is not 64 hex characters', 'abc123'],
        ['has a non-hex character', `${sha256('x').slice(0, 63)}g`],
      ])('a sha256 that %s gives 400 INVALID_REQUEST and keeps nothing', async (_label, value) => {
        const before = await snapshot();

        const res = await upload('checked.txt', 'the real bytes', { sha256: value });

        expectError(res, 400, 'INVALID_REQUEST');
        expect(await snapshot()).toEqual(before);
      });

      test('the download answers the digest as Repr-Digest beside the ETag', async () => {
        const res = await upload('repr.txt', 'represented');

        const got = await api.get(`/v1/files/${res.body.id}/content`);

        expect(got.headers.get('repr-digest')).toBe(`sha-256=:${Buffer.from(sha256('represented'), 'hex').toString('base64')}:`);
        expect(got.headers.get('etag')).toBe(`"${sha256('represented')}"`);
      });
    });

    describe('failed uploads leave nothing behind', () => {
      test('a file one byte over MAX_UPLOAD_BYTES gives 413 FILE_TOO_LARGE', async () => {
        const before = await snapshot();

        const res = await upload('big.bin', randomBytes(LIMIT + 1));

        expectError(res, 413, 'FILE_TOO_LARGE');
        expect(await snapshot()).toEqual(before);
      });

      test('a file of exactly MAX_UPLOAD_BYTES is accepted', async () => {
        const res = await upload('exact.bin', randomBytes(LIMIT));

        expect(res.status).toBe(201);
        expect(res.body.size).toBe(LIMIT);
      });

      test('an unknown folderId gives 404 NOT_FOUND', async () => {
        const before = await snapshot();

        const res = await upload('orphan.txt', 'x', { folderId: newId() });

        expectError(res, 404, 'NOT_FOUND');
        expect(await snapshot()).toEqual(before);
      });

      test('a folderId of a deleted folder gives 404 NOT_FOUND', async () => {
        const folder = await insertFolder(env.db, userId, 'gone', null, { deletedAt: new Date() });
        const before = await snapshot();

        const res = await upload('orphan.txt', 'x', { folderId: folder });

        expectError(res, 404, 'NOT_FOUND');
        expect(await snapshot()).toEqual(before);
      });

      test('a folderId that names a file gives 404 NOT_FOUND', async () => {
        const file = await insertFile(env.db, userId, 'plain-file.txt');
        const before = await snapshot();

        const res = await upload('orphan.txt', 'x', { folderId: file });

        expectError(res, 404, 'NOT_FOUND');
        expect(await snapshot()).toEqual(before);
      });

      test('a malformed folderId gives 400 INVALID_REQUEST', async () => {
        const before = await snapshot();

        const res = await upload('orphan.txt', 'x', { folderId: 'not-a-folder' });

        expectError(res, 400, 'INVALID_REQUEST');
        expect(await snapshot()).toEqual(before);
      });

      test.each([
        ['not hex', 'not-an-id'],
        ['upper-case hex', newId().toUpperCase()],
        ['31 characters', newId().slice(1)],
      ])('a malformed id (%s) gives 400 INVALID_REQUEST', async (_label, id) => {
        const before = await snapshot();

        const res = await upload('bad-id.txt', 'x', { id });

        expectError(res, 400, 'INVALID_REQUEST');
        expect(await snapshot()).toEqual(before);
      });

      test.each([
        ['an active file', async () => (await upload('holder.txt', 'x')).body.id as string],
        ['a deleted file', async () => insertFile(env.db, userId, 'deleted-holder.txt', null, { deletedAt: new Date() })],
        ['a folder', async () => insertFolder(env.db, userId, 'holder-folder')],
      ])('an id already used by %s gives 400 INVALID_REQUEST and leaves that resource unchanged', async (_label, arrange) => {
        const id = await arrange();
        const holder = await rowOf(id);
        const before = await snapshot();

        const res = await upload('intruder.txt', 'x', { id });

        expectError(res, 400, 'INVALID_REQUEST');
        expect(await snapshot()).toEqual(before);
        expect(await rowOf(id)).toEqual(holder);
      });

      test.each([
        ['no file part', [{ name: 'name', content: 'x.txt' }]],
        ['two file parts', [
          { name: 'file', filename: 'a.txt', contentType: 'text/plain', content: 'a' },
          { name: 'file', filename: 'b.txt', contentType: 'text/plain', content: 'b' },
        ]],
        ['the file in another part', [{ name: 'upload', filename: 'a.txt', contentType: 'text/plain', content: 'a' }]],
        ['the name field given twice', [
          { name: 'name', content: 'one.txt' },
          { name: 'name', content: 'two.txt' },
          { name: 'file', filename: 'a.txt', contentType: 'text/plain', content: 'a' },
        ]],
        ['a malformed id field after the file part', [
          { name: 'file', filename: 'a.txt', contentType: 'text/plain', content: 'a' },
          { name: 'id', content: 'not-an-id' },
        ]],
      ])('a multipart body with %s gives 400 INVALID_REQUEST', async (_label, parts) => {
        const before = await snapshot();

        const res = await rawUpload(parts as RawPart[]);

        expectError(res, 400, 'INVALID_REQUEST');
        expect(await snapshot()).toEqual(before);
      });

      test('a body that is not multipart gives 400 INVALID_REQUEST', async () => {
        const before = await snapshot();

        const res = await api.post('/v1/files', { name: 'x.txt', content: 'x' });

        expectError(res, 400, 'INVALID_REQUEST');
        expect(await snapshot()).toEqual(before);
      });

      test('a client that disconnects in the middle of the file leaves no staged or stored file and no row', async () => {
        const before = await snapshot();
        const upload = startPartialUpload(gateway.baseUrl, token, [{ name: 'file', filename: 'cut.bin', contentType: 'application/octet-stream', content: randomBytes(900) }], 500);
        if (driver === 'local') {
          // The server has started writing the staged copy before the connection is cut.
          expect(await waitFor(async () => (await stored.staging()).length > 0)).toBe(true);
        } else {
          // On S3 a body smaller than a part is sent in one PutObject at its end: nothing shows before.
          await new Promise((r) => setTimeout(r, 300));
        }

        upload.abort();

        await waitFor(async () => JSON.stringify(await snapshot()) === JSON.stringify(before));
        expect(await snapshot()).toEqual(before);
        expect(await stored.unfinishedMultipartUploads()).toEqual([]);
      });
    });
  });

  describe('GET /v1/files/:id/content', () => {
    const NAME = 'r\u00e9sum\u00e9 "final"; v2.txt';
    const CONTENT = 'abcdefghijklmnopqrstuvwxyz';
    let id: string;

    beforeAll(async () => {
      const res = await upload('x.txt', CONTENT, { name: NAME });
      expect(res.status).toBe(201);
      id = res.body.id;
    });

    test('returns the stored bytes with Content-Type, Content-Length, ETag, Accept-Ranges and an attachment Content-Disposition', async () => {
      const res = await api.get(`/v1/files/${id}/content`);

      expect(res.status).toBe(200);
      expect(res.text).toBe(CONTENT);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain\b/);
      expect(res.headers.get('content-length')).toBe(String(CONTENT.length));
      expect(res.headers.get('etag')).toBe(`"${sha256(CONTENT)}"`);
      expect(res.headers.get('accept-ranges')).toBe('bytes');
    });

    test('Content-Disposition is an attachment whose file name is safely encoded', async () => {
      const res = await api.get(`/v1/files/${id}/content`);

      const header = res.headers.get('content-disposition')!;
      expect(header).toMatch(/^attachment;/);
      // The header is plain ASCII; the exact name travels in the RFC 8187 extended parameter.
      expect(header).toMatch(/^[\x20-\x7e]+$/);
      const extended = /filename\*=UTF-8''([^;\s]+)/.exec(header);
      expect(extended).not.toBeNull();
      expect(decodeURIComponent(extended![1]!)).toBe(NAME);
    });

    test('binary content comes back byte for byte', async () => {
      const bytes = randomBytes(1000);
      const created = await upload('random.bin', bytes, {}, 'application/octet-stream');

      const res = await fetch(`${gateway.baseUrl}/v1/files/${created.body.id}/content`, { headers: { authorization: `Bearer ${token}` } });

      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    });

    test.each([
      ['bytes=2-5', 'cdef', 'bytes 2-5/26'],
      ['bytes=20-', 'uvwxyz', 'bytes 20-25/26'],
      ['bytes=-3', 'xyz', 'bytes 23-25/26'],
    ])('Range %s gives 206 with %j and Content-Range %s', async (range, body, contentRange) => {
      const res = await api.get(`/v1/files/${id}/content`, { range });

      expect(res.status).toBe(206);
      expect(res.text).toBe(body);
      expect(res.headers.get('content-range')).toBe(contentRange);
      expect(res.headers.get('content-length')).toBe(String(body.length));
    });

    test('a Range that starts past the end gives 416 with Content-Range bytes */size', async () => {
      const res = await api.get(`/v1/files/${id}/content`, { range: 'bytes=100-200' });

      expectError(res, 416, 'INVALID_REQUEST');
      expect(res.headers.get('content-range')).toBe(`bytes */${CONTENT.length}`);
    });

    test.each([
      ['the current ETag', (etag: string) => etag],
      ['the weak form of the current ETag', (etag: string) => `W/${etag}`],
      ['a list holding the current ETag', (etag: string) => `"${sha256('other')}", ${etag}`],
      ['*', () => '*'],
    ])('If-None-Match with %s gives 304 with the ETag and without a body', async (_label, header) => {
      const etag = `"${sha256(CONTENT)}"`;

      // fetch() adds Cache-Control: no-cache to conditional requests; the 304 must not depend on it.
      const res = await api.get(`/v1/files/${id}/content`, { 'if-none-match': header(etag) });

      expect(res.status).toBe(304);
      expect(res.text).toBe('');
      expect(res.headers.get('etag')).toBe(etag);
    });

    test('If-None-Match with another ETag gives 200 with the bytes', async () => {
      const res = await api.get(`/v1/files/${id}/content`, { 'if-none-match': `"${sha256('something else')}"` });

      expect(res.status).toBe(200);
      expect(res.text).toBe(CONTENT);
    });

    test.each([
      ['a file created by a sync op, which has no content', async () => insertFile(env.db, userId, 'sync-created.txt')],
      ['a folder', async () => insertFolder(env.db, userId, 'content-folder')],
      ['an unknown id', async () => newId()],
      ['a malformed id', async () => 'not-an-id'],
      ['a deleted file', async () => {
        const res = await upload('deleted-content.txt', 'x');
        await api.delete(`/v1/files/${res.body.id}`);
        return res.body.id as string;
      }],
      ['a file whose bytes are missing from the store', async () => {
        const res = await upload('vanished.txt', 'x');
        await stored.store.remove(`${deviceId}/${res.body.id}.txt`);
        return res.body.id as string;
      }],
    ])('the content of %s gives 404 NOT_FOUND', async (_label, arrange) => {
      const target = await arrange();

      expectError(await api.get(`/v1/files/${target}/content`), 404, 'NOT_FOUND');
    });
  });
});
