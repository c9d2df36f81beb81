import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { countRows, expectError, HEX32, insertFile, insertFolder, sha256 } from '../support/fixtures';
import type { RunningGateway, TestEnv } from '../support/harness';
import { rawRequest } from '../support/raw.http';
import { startStack, type TestStack } from '../support/stack';

const LIMIT = 8 * 1024 * 1024;

describe.each(DRIVERS)('content replacement on the %s driver', (driver) => {
  let env: TestEnv;
  let gateway: RunningGateway;
  let stack: TestStack;
  let api: Api;
  let other: Api;
  let userId: string;
  let deviceId: string;
  let token: string;
  let nextOpId = 1;
  let stored: StoredContent;

  beforeAll(async () => {
    stack = await startStack(onDriver(driver, { MAX_UPLOAD_BYTES: String(LIMIT) }));
    ({ env, gateway } = stack);
    stored = new StoredContent(env);
    ({ api, userId, deviceId, token } = await stack.admin.createUser('writer'));
    ({ api: other } = await stack.admin.createUser('stranger'));
  });

  afterAll(async () => {
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await stack?.close();
  });

  const rowOf = (id: string) => env.db('resources').where({ id }).first();
  /** Everything a failed write must leave as it was: the store's objects and the row. */
  const state = async (id?: string) => ({ files: await stored.everything(), row: id ? await rowOf(id) : undefined });
  // A Buffer, since fetch would label a string text/plain, and a declared type is a rule of its own.
  const put = (id: string, body: Buffer | string, headers: Record<string, string> = {}, client = api) =>
    client.request('PUT', `/v1/files/${id}/content`, { body: typeof body === 'string' ? Buffer.from(body) : body, headers });
  const b64 = (data: Buffer | string) => Buffer.from(sha256(data), 'hex').toString('base64');

  async function uploaded(name: string, content: Buffer | string, type = 'text/plain') {
    const res = await api.upload({}, { name, content, type });
    expect(res.status).toBe(201);
    return res.body as { id: string; rev: number; sha256: string };
  }

  /** A file created the way a sync client creates it: a `create` op, no content yet. */
  async function createdBySync(name: string, mimeType?: string): Promise<string> {
    const id = newId();
    const payload: Record<string, unknown> = { resourceType: 'file', name, parentId: null, size: 0 };
    if (mimeType !== undefined) payload.mimeType = mimeType;
    const res = await api.post('/v1/sync/ops', { ops: [{ opId: nextOpId++, type: 'create', resourceId: id, payload }] });
    expect(res.body.applied).toEqual([expect.objectContaining({ resourceId: id, outcome: 'applied' })]);
    return id;
  }

  describe('PUT /v1/files/:id/content', () => {
    test('replaces the content: 200 with the File, rev + 1, a new storage key, the old bytes kept once as a version', async () => {
      const file = await uploaded('notes.txt', 'old content');
      const oldKey = (await rowOf(file.id)).storage_key as string;

      const res = await put(file.id, 'new content, longer');

      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: file.id, name: 'notes.txt', size: 19, mimeType: 'text/plain', rev: file.rev + 1, sha256: sha256('new content, longer') });
      const row = await rowOf(file.id);
      expect({ ...row, size_bytes: Number(row.size_bytes) }).toMatchObject({ size_bytes: 19, content_sha256: sha256('new content, longer'), rev: file.rev + 1 });
      expect(row.storage_key).not.toBe(oldKey);
      expect(row.storage_key).toMatch(new RegExp(`^${deviceId}/${file.id}\\.[0-9a-f]{8}\\.txt$`));
      expect(await stored.text(row.storage_key)).toBe('new content, longer');
      expect(await stored.text(oldKey)).toBe('old content');
      expect(await env.db('file_versions').where({ file_id: file.id }).select('storage_key')).toEqual([{ storage_key: oldKey }]);
      const got = await api.get(`/v1/files/${file.id}/content`);
      expect(got.text).toBe('new content, longer');
      expect(got.headers.get('etag')).toBe(`"${sha256('new content, longer')}"`);
    });

    test('gives content to a file created by a sync create op, which had none', async () => {
      const id = await createdBySync('from-sync.md', 'text/markdown');
      expectError(await api.get(`/v1/files/${id}/content`), 404, 'NOT_FOUND');

      const res = await put(id, '# hello');

      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id, size: 7, sha256: sha256('# hello'), mimeType: 'text/markdown', rev: 2 });
      expect((await api.get(`/v1/files/${id}/content`)).text).toBe('# hello');
    });

    test('each PUT grows rev by exactly 1, and without conditions the last writer wins', async () => {
      const file = await uploaded('counter.txt', 'v1');
      for (const [i, body] of ['v2', 'v3', 'v4'].entries()) {
        const res = await put(file.id, body);
        expect(res.body.rev).toBe(file.rev + i + 1);
      }
      expect(await rowOf(file.id)).toMatchObject({ rev: file.rev + 3, content_sha256: sha256('v4') });
      // The current content and the three it replaced, each once.
      expect((await stored.keys()).filter((k) => k.startsWith(`${deviceId}/${file.id}`))).toHaveLength(4);
      expect(await env.db('file_versions').where({ file_id: file.id }).select('id')).toHaveLength(3);
    });

    test('an empty body is empty content', async () => {
      const file = await uploaded('empty.txt', 'something');
      const res = await put(file.id, '');
      expect(res.body).toMatchObject({ size: 0, sha256: sha256('') });
    });

    test('a body sent as application/json is stored as it is, not parsed, even past the 1 MiB JSON limit', async () => {
      const file = await uploaded('data.json', '{}', 'application/json');
      const body = JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024) });
      const res = await put(file.id, body, { 'content-type': 'application/json' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ size: body.length, sha256: sha256(body) });
    });

    test('the bytes come from another device of the same user: they go under that device\'s folder', async () => {
      const file = await uploaded('shared.txt', 'one');
      const { api: laptop, deviceId: laptopId } = await new Api(gateway.baseUrl).login('writer', 'user-password-1');
      const res = await put(file.id, 'two', {}, laptop);
      expect(res.status).toBe(200);
      expect((await rowOf(file.id)).storage_key).toMatch(new RegExp(`^${laptopId}/${file.id}\\.`));
    });
  });

  describe('Content-Type of new content', () => {
    test.each([
      ['a declared type becomes the mimeType', 'text/plain', 'image/png', 'image/png'],
      ['parameters are dropped and the type lowercased', 'text/plain', 'Text/HTML; charset=utf-8', 'text/html'],
      ['application/octet-stream keeps the current type', 'text/plain', 'application/octet-stream', 'text/plain'],
      ['no Content-Type keeps the current type', 'text/plain', undefined, 'text/plain'],
    ])('%s', async (_title, initial, declared, expected) => {
      const file = await uploaded(`typed-${newId()}.txt`, 'x', initial);
      const res = await put(file.id, 'y', declared ? { 'content-type': declared } : {});
      expect(res.status).toBe(200);
      expect(res.body.mimeType).toBe(expected);
      expect((await rowOf(file.id)).mime_type).toBe(expected);
    });

    test('a file that had no type gets the one its extension implies', async () => {
      // A create op always leaves a type when the name implies one; a row from before that rule may have none.
      const id = await insertFile(env.db, userId, 'picture.png', null, { mimeType: null });
      const res = await put(id, Buffer.from([1, 2, 3]), { 'content-type': 'application/octet-stream' });
      expect(res.body.mimeType).toBe('image/png');
    });
  });

  describe('what is not the caller\'s file is 404, and changes nothing', () => {
    test.each([
      ['a folder', async () => insertFolder(env.db, userId, `folder-${newId()}`)],
      ['an absent id', async () => newId()],
      ['a malformed id', async () => 'not-an-id'],
      [
        'a deleted file',
        async () => {
          const f = await uploaded(`gone-${newId()}.txt`, 'x');
          expect((await api.delete(`/v1/files/${f.id}`)).status).toBe(200);
          return f.id;
        },
      ],
      ['another user\'s file', async () => (await other.upload({}, { name: 'theirs.txt', content: 'mine', type: 'text/plain' })).body.id as string],
    ])('%s', async (_title, arrange) => {
      const id = await arrange();
      const before = await state(id);

      const res = await put(id, 'intruder');

      expectError(res, 404, 'NOT_FOUND');
      expect(await state(id)).toEqual(before);
    });
  });

  describe('the size limit', () => {
    test('a Content-Length over MAX_UPLOAD_BYTES is refused with 413 before any byte is read', async () => {
      const file = await uploaded('big-declared.txt', 'small');
      const before = await state(file.id);

      // Headers only: the answer comes without the body ever being sent.
      const res = await rawRequest(gateway.baseUrl, 'PUT', `/v1/files/${file.id}/content`, {
        headers: { authorization: `Bearer ${token}`, 'content-length': LIMIT + 1 },
        endBody: false,
      });

      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('FILE_TOO_LARGE');
      expect(res.sent).toBe(0);
      expect(await state(file.id)).toEqual(before);
    });

    test('a chunked body is stopped with 413 as soon as it passes the limit, and nothing of it is kept', async () => {
      const file = await uploaded('big-streamed.txt', 'small');
      const before = await state(file.id);
      const chunk = Buffer.alloc(1024 * 1024, 7);

      const res = await rawRequest(gateway.baseUrl, 'PUT', `/v1/files/${file.id}/content`, {
        headers: { authorization: `Bearer ${token}`, 'transfer-encoding': 'chunked' },
        chunks: Array.from({ length: 64 }, () => chunk),
      });

      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('FILE_TOO_LARGE');
      // The answer came while the client still had most of its 64 MiB to send.
      expect(res.sent).toBeLessThan(32 * 1024 * 1024);
      expect(await state(file.id)).toEqual(before);
    });

    test('exactly MAX_UPLOAD_BYTES is accepted', async () => {
      const file = await uploaded('at-limit.bin', 'small');
      const body = randomBytes(LIMIT);
      const res = await put(file.id, body);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ size: LIMIT, sha256: sha256(body) });
    });

    test('a client that hangs up halfway leaves nothing behind', async () => {
      const file = await uploaded('cut.txt', 'small');
      const before = await state(file.id);

      await rawRequest(gateway.baseUrl, 'PUT', `/v1/files/${file.id}/content`, {
        headers: { authorization: `Bearer ${token}`, 'content-length': 1024 * 1024 },
        chunks: [Buffer.alloc(300 * 1024, 1)],
        abortAfterBody: true,
      });

      let after = await state(file.id);
      for (let i = 0; i < 40 && JSON.stringify(after) !== JSON.stringify(before); i++) {
        await new Promise((r) => setTimeout(r, 50));
        after = await state(file.id);
      }
      expect(after).toEqual(before);
    });
  });

  describe('If-Match and If-None-Match', () => {
    test('If-Match with the current ETag replaces the content', async () => {
      const file = await uploaded('cond.txt', 'current');
      const res = await put(file.id, 'next', { 'if-match': `"${sha256('current')}"` });
      expect(res.status).toBe(200);
      expect(res.body.sha256).toBe(sha256('next'));
    });

    test('If-Match: * holds for a file that has content', async () => {
      const file = await uploaded('star.txt', 'current');
      expect((await put(file.id, 'next', { 'if-match': '*' })).status).toBe(200);
    });

    test.each([
      ['a stale ETag', async () => (await uploaded(`stale-${newId()}.txt`, 'current')).id, `"${sha256('something else')}"`],
      ['a weak ETag (If-Match compares strongly)', async () => (await uploaded(`weak-${newId()}.txt`, 'current')).id, `W/"${sha256('current')}"`],
      ['any ETag on a file without content', async () => createdBySync(`nocontent-${newId()}.txt`), `"${sha256('')}"`],
      ['* on a file without content', async () => createdBySync(`nocontent-${newId()}.txt`), '*'],
    ])('If-Match with %s: 412 PRECONDITION_FAILED and nothing changes', async (_title, arrange, ifMatch) => {
      const id = await arrange();
      const before = await state(id);

      const res = await put(id, 'next', { 'if-match': ifMatch });

      expectError(res, 412, 'PRECONDITION_FAILED');
      expect(await state(id)).toEqual(before);
    });

    test('If-None-Match: * gives content to a file that has none', async () => {
      const id = await createdBySync('first.txt');
      const res = await put(id, 'first', { 'if-none-match': '*' });
      expect(res.status).toBe(200);
    });

    test('If-None-Match: * on a file that has content: 412 and nothing changes', async () => {
      const file = await uploaded('has-content.txt', 'there');
      const before = await state(file.id);
      expectError(await put(file.id, 'again', { 'if-none-match': '*' }), 412, 'PRECONDITION_FAILED');
      expect(await state(file.id)).toEqual(before);
    });

    test('two PUTs at once with the same If-Match: exactly one wins, the other gets 412', async () => {
      const file = await uploaded('race.txt', 'base');
      const ifMatch = `"${sha256('base')}"`;
      const bodies = [randomBytes(2 * 1024 * 1024), randomBytes(2 * 1024 * 1024)];

      const results = await Promise.all(bodies.map((b) => put(file.id, b, { 'if-match': ifMatch })));

      expect(results.map((r) => r.status).sort()).toEqual([200, 412]);
      const winner = results.findIndex((r) => r.status === 200);
      const row = await rowOf(file.id);
      expect(row).toMatchObject({ content_sha256: sha256(bodies[winner]!), rev: file.rev + 1 });
      const mine = (await stored.everything()).filter((f) => f.includes(file.id));
      const kept = await env.db('file_versions').where({ file_id: file.id }).select('storage_key');
      expect(mine.sort()).toEqual([row.storage_key, ...kept.map((v: { storage_key: string }) => v.storage_key)].sort());
      expect(kept).toHaveLength(1);
      expect(await stored.staging()).toEqual([]);
      expect(await stored.unfinishedMultipartUploads()).toEqual([]);
    });
  });

  describe('digests (RFC 9530)', () => {
    test.each([
      ['Repr-Digest', (b: string) => ({ 'repr-digest': `sha-256=:${b64(b)}:` })],
      ['Content-Digest', (b: string) => ({ 'content-digest': `sha-256=:${b64(b)}:` })],
      ['several algorithms, with unknown ones ignored', (b: string) => ({ 'repr-digest': `sha-512=:${Buffer.alloc(64).toString('base64')}:, sha-256=:${b64(b)}:;x=1, md5=:AAAA:` })],
      ['only an unknown algorithm (nothing to check)', (_b: string) => ({ 'repr-digest': 'sha-512=:AAAA:' })],
    ])('%s: a matching digest is accepted', async (_title, headers) => {
      const file = await uploaded(`digest-${newId()}.txt`, 'x');
      const res = await put(file.id, 'digested', headers('digested'));
      expect(res.status).toBe(200);
      expect(res.body.sha256).toBe(sha256('digested'));
    });

    test.each([
      ['Repr-Digest', { 'repr-digest': `sha-256=:${b64('other bytes')}:` }],
      ['Content-Digest', { 'content-digest': `sha-256=:${b64('other bytes')}:` }],
    ])('a %s that does not match the bytes: 400 and nothing kept', async (_title, headers) => {
      const file = await uploaded(`mismatch-${newId()}.txt`, 'x');
      const before = await state(file.id);
      expectError(await put(file.id, 'the real bytes', headers), 400, 'INVALID_REQUEST');
      expect(await state(file.id)).toEqual(before);
    });

    test.each([
      ['a value that is not a byte sequence', 'sha-256=abc'],
      ['a byte sequence of the wrong length', `sha-256=:${Buffer.alloc(16).toString('base64')}:`],
      ['a byte sequence that is not base64', 'sha-256=:!!!!:'],
      ['an unterminated byte sequence', `sha-256=:${b64('x')}`],
      ['a dictionary that is not one', 'sha-256 :AAAA:'],
    ])('a malformed sha-256 (%s): 400 before the body is stored', async (_title, value) => {
      const file = await uploaded(`malformed-${newId()}.txt`, 'x');
      const before = await state(file.id);
      expectError(await put(file.id, 'bytes', { 'repr-digest': value }), 400, 'INVALID_REQUEST');
      expect(await state(file.id)).toEqual(before);
    });

    test('Repr-Digest and Content-Digest that disagree: 400', async () => {
      const file = await uploaded('disagree.txt', 'x');
      const res = await put(file.id, 'bytes', { 'repr-digest': `sha-256=:${b64('bytes')}:`, 'content-digest': `sha-256=:${b64('other')}:` });
      expectError(res, 400, 'INVALID_REQUEST');
    });

    test('GET content answers Repr-Digest of the whole content on 200 and on 206, beside the ETag', async () => {
      const body = 'the whole content of the file';
      const file = await uploaded('digest-get.txt', body);

      const full = await api.get(`/v1/files/${file.id}/content`);
      const part = await api.get(`/v1/files/${file.id}/content`, { range: 'bytes=4-8' });

      expect(full.status).toBe(200);
      expect(full.headers.get('repr-digest')).toBe(`sha-256=:${b64(body)}:`);
      expect(full.headers.get('etag')).toBe(`"${sha256(body)}"`);
      expect(part.status).toBe(206);
      expect(part.text).toBe('whole');
      expect(part.headers.get('repr-digest')).toBe(`sha-256=:${b64(body)}:`);
    });
  });

  describe('readers and writers', () => {
    test('downloads at once of files of several MiB each get their own bytes, whole and by range', async () => {
      // Larger than one read (1 MiB), so reads alternate between buffers that later downloads reuse.
      const files = await Promise.all(
        [0, 1, 2].map(async (i) => {
          const bytes = randomBytes(2 * 1024 * 1024 + 1000 * (i + 1));
          const created = await uploaded(`big-${i}.bin`, bytes, 'application/octet-stream');
          return { id: created.id, bytes };
        }),
      );
      const get = async (id: string, range?: string) => {
        const res = await fetch(`${gateway.baseUrl}/v1/files/${id}/content`, { headers: { authorization: `Bearer ${token}`, ...(range ? { range } : {}) } });
        const body = Buffer.from(await res.arrayBuffer());
        return { status: res.status, length: body.length, sha256: sha256(body) };
      };
      for (let round = 0; round < 2; round++) {
        const answers = await Promise.all(files.flatMap((f) => [get(f.id), get(f.id, 'bytes=1048000-2097999')]));
        files.forEach((f, i) => {
          const part = f.bytes.subarray(1048000, 2098000);
          expect(answers[2 * i]).toEqual({ status: 200, length: f.bytes.length, sha256: sha256(f.bytes) });
          expect(answers[2 * i + 1]).toEqual({ status: 206, length: part.length, sha256: sha256(part) });
        });
      }
    });

    test('a download started before a PUT gets the old bytes complete; the old file is kept as a version', async () => {
      const oldBytes = randomBytes(LIMIT);
      const file = await uploaded('streamed.bin', oldBytes, 'application/octet-stream');
      const oldKey: string = (await rowOf(file.id)).storage_key;

      // Start the download and stop reading after its first chunk: the server has the old file open.
      const received: Buffer[] = [];
      const download = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.get(`${gateway.baseUrl}/v1/files/${file.id}/content`, { headers: { authorization: `Bearer ${token}` } }, resolve);
        req.on('error', reject);
      });
      const first = await new Promise<Buffer>((resolve) => download.once('data', resolve));
      download.pause();
      received.push(first);

      const newBytes = randomBytes(1024);
      const res = await put(file.id, newBytes);
      expect(res.status).toBe(200);
      expect(await env.db('file_versions').where({ storage_key: oldKey }).select('id')).toHaveLength(1);

      download.on('data', (c: Buffer) => received.push(c));
      await new Promise((resolve) => download.on('end', resolve).resume());
      expect(sha256(Buffer.concat(received))).toBe(sha256(oldBytes));
      expect((await api.get(`/v1/files/${file.id}/content`)).text).toBe(newBytes.toString());
    });

    test('the change feed shows the new sha256, size and rev after a PUT', async () => {
      const file = await uploaded('followed.txt', 'before');
      let cursor: string | undefined;
      for (;;) {
        const page = await api.get(`/v1/sync/changes${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`);
        cursor = page.body.cursor;
        if (!page.body.hasMore) break;
      }

      await put(file.id, 'after the change');
      const changes = await api.get(`/v1/sync/changes?cursor=${encodeURIComponent(cursor!)}`);

      expect(changes.status).toBe(200);
      expect(changes.body.items).toEqual([
        expect.objectContaining({ id: file.id, type: 'file', deleted: false, rev: file.rev + 1, size: 16, sha256: sha256('after the change') }),
      ]);
    });
  });

  describe('a commit that fails', () => {
    // The owner's change position is written last in every write transaction; failing it fails the
    // transaction after the content has been renamed into place, as a lost connection at commit would.
    const failOwnerUpdates = () =>
      env.db.raw(
        `CREATE TRIGGER fail_owner_update BEFORE UPDATE ON users FOR EACH ROW
         BEGIN IF NEW.change_seq <> OLD.change_seq THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'injected failure'; END IF; END`,
      );
    const restore = () => env.db.raw('DROP TRIGGER IF EXISTS fail_owner_update');

    afterEach(restore);

    test('PUT: 500, and the row, the old bytes and the store are as before', async () => {
      const file = await uploaded('commit-put.txt', 'kept');
      const before = await state(file.id);
      await failOwnerUpdates();

      const res = await put(file.id, 'lost');

      expectError(res, 500, 'INTERNAL');
      expect(await state(file.id)).toEqual(before);
      await restore();
      expect((await api.get(`/v1/files/${file.id}/content`)).text).toBe('kept');
    });

    test('POST /files: 500, no row and nothing in the store', async () => {
      const before = { files: await stored.everything(), rows: await countRows(env.db, 'resources') };
      await failOwnerUpdates();

      const res = await api.upload({ id: newId() }, { name: 'commit-post.txt', content: 'lost', type: 'text/plain' });

      expectError(res, 500, 'INTERNAL');
      expect({ files: await stored.everything(), rows: await countRows(env.db, 'resources') }).toEqual(before);
    });
  });

  test('ids in answers are well-formed', async () => {
    const file = await uploaded('shape.txt', 'x');
    const res = await put(file.id, 'y');
    expect(res.body.id).toMatch(HEX32);
    expect(Object.keys(res.body).sort()).toEqual(['createdAt', 'folderId', 'id', 'mimeType', 'name', 'rev', 'sha256', 'size', 'updatedAt']);
  });
});
