import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import * as tus from 'tus-js-client';
import { newId } from '../../shared/ids';
import { createLogger } from '../../shared/logger';
import { redisOptions } from '../../shared/redis/redis.connection';
import { EXPIRE_UPLOADS_JOB, MAINTENANCE_QUEUE } from '../../shared/queue/maintenance.contract';
import { startMaintenance, type MaintenanceWorkers } from '../../services/worker/maintenance.workers';
import { Api, type ApiResponse } from '../support/client';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { countRows, expectError, insertFolder, sha256, waitFor } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { CuttingProxy, encodeMetadata, TusRaw } from '../support/tus';

const MiB = 1024 * 1024;

const LIMIT = 24 * MiB;

describe.each(DRIVERS)('resumable uploads on the %s driver', (driver) => {
  let env: TestEnv;
  let gateway: RunningGateway;
  let owner: { api: Api; userId: string; deviceId: string; token: string };
  let other: { api: Api; userId: string };
  let raw: TusRaw;
  let stored: StoredContent;

  beforeAll(async () => {
    env = await createTestEnv(onDriver(driver, { MAX_UPLOAD_BYTES: String(LIMIT) }));
    stored = new StoredContent(env);
    gateway = await startGateway(env);
    const { api: admin } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
    owner = await admin.createUser('uploader');
    other = await admin.createUser('stranger');
    raw = new TusRaw(owner.api);
  });

  afterAll(async () => {
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await gateway?.close();
    await env?.dropAll();
  });

  /** What resumable uploads in progress keep in a store (StoredContent.resumableEntries). */
  const tusFiles = (of = stored) => of.resumableEntries();

  // Each test starts with no upload in progress, whatever the one before left.
  afterEach(async () => {
    const uploads = stored.store.resumable.dataStore(3600_000);
    for (const id of new Set((await tusFiles()).map((name) => name.split('.')[0]!))) await uploads.remove(id);
  });

  /** A HEAD response has no body: the status and the JSON type of the (empty) error say enough. */
  function expectHeadError(res: ApiResponse, status: number): void {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  }
  const idOf = (location: string) => location.split('/').pop()!;

  describe('resuming with a stock tus client', () => {
    test('a 20 MiB upload cut part-way is finished by a new client from the server offset, sending only the missing bytes', async () => {
      const data = randomBytes(20 * MiB);
      const proxy = await CuttingProxy.start(gateway.baseUrl);
      try {
        proxy.cutAfter = 8 * MiB;
        const options = {
          endpoint: `${proxy.url}/v1/uploads`,
          headers: { Authorization: `Bearer ${owner.token}` },
          metadata: { name: 'big.bin', filetype: 'application/octet-stream' },
          retryDelays: null,
        };
        const first = new tus.Upload(data, options);
        const failure = await new Promise<Error | null>((resolve) => {
          first.options.onError = (err) => resolve(err);
          first.options.onSuccess = () => resolve(null);
          first.start();
        });
        expect(failure).toBeInstanceOf(Error);
        expect(first.url).toMatch(/\/v1\/uploads\/[0-9a-f]{32}$/);

        const head = await raw.head(new URL(first.url!).pathname);
        const offset = Number(head.headers.get('upload-offset'));
        expect(offset).toBeGreaterThan(0);
        expect(offset).toBeLessThan(data.length);

        proxy.cutAfter = undefined;
        proxy.sent = 0;
        const second = new tus.Upload(data, { ...options, uploadUrl: first.url });
        const body = await new Promise<string>((resolve, reject) => {
          second.options.onError = reject;
          second.options.onSuccess = ({ lastResponse }) => resolve(lastResponse.getBody());
          second.start();
        });
        // The body bytes of the second session are exactly the missing part; the rest is two requests' headers.
        expect(proxy.sent).toBeGreaterThanOrEqual(data.length - offset);
        expect(proxy.sent).toBeLessThan(data.length - offset + 4096);

        const file = JSON.parse(body);
        expect(file).toMatchObject({ name: 'big.bin', size: data.length, sha256: sha256(data), folderId: '', rev: 1 });
        const download = await owner.api.request('GET', `/v1/files/${file.id}/content`);
        expect(download.status).toBe(200);
        const bytes = Buffer.from(await (await fetch(`${gateway.baseUrl}/v1/files/${file.id}/content`, { headers: { authorization: `Bearer ${owner.token}` } })).arrayBuffer());
        expect(bytes.equals(data)).toBe(true);
        expect(await tusFiles()).toEqual([]);
      } finally {
        await proxy.close();
      }
    });
    test('an upload whose bytes all arrived but whose completion never ran is completed by an empty PATCH at its size, not stuck', async () => {
      const data = randomBytes(3 * 1024);
      const location = await raw.start(data.length, { name: 'late-finish.bin' });
      // The bytes reach the store, as in a PATCH that ended before its completion could run (its
      // lock's Redis went away, its gateway died): on S3 the multipart upload is then completed.
      const { Readable } = await import('node:stream');
      await stored.store.resumable.dataStore(3600_000).write(Readable.from([data]), idOf(location), 0);
      const head = await raw.head(location);
      expect(head.status).toBe(200);
      expect(head.headers.get('upload-offset')).toBe(String(data.length));

      const finish = await raw.patch(location, data.length, Buffer.alloc(0));
      expect(finish.status).toBe(200);
      expect(finish.body).toMatchObject({ name: 'late-finish.bin', size: data.length, sha256: sha256(data) });
      const got = await fetch(`${gateway.baseUrl}/v1/files/${finish.body.id}/content`, { headers: { authorization: `Bearer ${owner.token}` } });
      expect(got.status).toBe(200);
      expect(Buffer.from(await got.arrayBuffer()).equals(data)).toBe(true);
      expect(await tusFiles()).toEqual([]);
    });
  });

  describe('the rules of /v1/uploads', () => {
    test('every request but OPTIONS needs a Bearer token: 401 in the contract shape', async () => {
      const anon = new TusRaw(new Api(gateway.baseUrl));
      expectError(await anon.create(10, { name: 'a.txt' }), 401, 'UNAUTHORIZED');
      const location = await raw.start(10, { name: 'a.txt' });
      expectHeadError(await anon.head(location), 401);
      expectError(await anon.patch(location, 0, Buffer.from('0123456789')), 401, 'UNAUTHORIZED');
      expectError(await anon.delete(location), 401, 'UNAUTHORIZED');
      const options = await new Api(gateway.baseUrl).request('OPTIONS', '/v1/uploads');
      expect(options.status).toBe(204);
      expect(options.headers.get('tus-version')).toContain('1.0.0');
      expect(options.headers.get('tus-extension')?.split(',')).toEqual(expect.arrayContaining(['creation', 'termination', 'expiration']));
      expect(options.headers.get('tus-max-size')).toBe(String(LIMIT));
      expect((await raw.head(location)).headers.get('upload-offset')).toBe('0');
      await raw.delete(location);
    });

    test("another user's upload is not found on HEAD, PATCH and DELETE, and stays intact", async () => {
      const location = await raw.start(10, { name: 'mine.txt' });
      await raw.patch(location, 0, Buffer.from('01234'));
      const stranger = new TusRaw(other.api);
      expectHeadError(await stranger.head(location), 404);
      expectError(await stranger.patch(location, 5, Buffer.from('56789')), 404, 'NOT_FOUND');
      expectError(await stranger.delete(location), 404, 'NOT_FOUND');
      const head = await raw.head(location);
      expect(head.status).toBe(200);
      expect(head.headers.get('upload-offset')).toBe('5');
      expect(await stored.text(`.tus/${idOf(location)}${driver === 's3' ? '.part' : ''}`)).toBe('01234');
      await raw.delete(location);
    });

    test('Upload-Length over MAX_UPLOAD_BYTES is 413 FILE_TOO_LARGE and creates nothing', async () => {
      expectError(await raw.create(LIMIT + 1, { name: 'huge.bin' }), 413, 'FILE_TOO_LARGE');
      expect(await tusFiles()).toEqual([]);
    });

    test('Upload-Length is required: a deferred length is 400', async () => {
      expectError(await raw.create(null, { name: 'later.bin' }, { 'upload-defer-length': '1' }), 400, 'INVALID_REQUEST');
      expectError(await raw.create(null, { name: 'later.bin' }), 400, 'INVALID_REQUEST');
      expect(await tusFiles()).toEqual([]);
    });

    test.each([
      ['name missing', { folderId: newId() }],
      ['name empty', { name: '' }],
      ['name with a slash', { name: 'a/b' }],
      ['name ..', { name: '..' }],
      ['malformed folderId', { name: 'a', folderId: 'nope' }],
      ['malformed id', { name: 'a', id: 'ABC' }],
      ['malformed fileId', { name: 'a', fileId: '123' }],
      ['both id and fileId', { name: 'a', id: newId(), fileId: newId() }],
      ['malformed sha256', { name: 'a', sha256: 'abc' }],
    ])('metadata is checked at creation: %s is 400', async (_label, metadata) => {
      expectError(await raw.create(10, metadata as Record<string, string>), 400, 'INVALID_REQUEST');
      expect(await tusFiles()).toEqual([]);
    });

    test('an unknown folder or file is 404 already at creation', async () => {
      expectError(await raw.create(10, { name: 'a', folderId: newId() }), 404, 'NOT_FOUND');
      expectError(await raw.create(10, { name: 'a', fileId: newId() }), 404, 'NOT_FOUND');
      expect(await tusFiles()).toEqual([]);
    });

    test('the PATCH that completes the upload answers 200 with the File; row, content and change feed agree; tus bytes are gone', async () => {
      const folderId = await insertFolder(env.db, owner.userId, 'docs');
      const id = newId();
      const data = Buffer.from('hello, resumable world');
      const location = await raw.start(data.length, { name: 'Hello.TXT', folderId, id, sha256: sha256(data) });
      const partial = await raw.patch(location, 0, data.subarray(0, 10));
      expect(partial.status).toBe(204);
      expect(partial.headers.get('upload-offset')).toBe('10');
      expect(Date.parse(partial.headers.get('upload-expires')!)).toBeGreaterThan(Date.now());

      const done = await raw.patch(location, 10, data.subarray(10));
      expect(done.status).toBe(200);
      expect(done.headers.get('content-type')).toMatch(/^application\/json/);
      expect(done.body).toEqual({
        id,
        name: 'Hello.TXT',
        size: data.length,
        mimeType: 'text/plain',
        folderId,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        rev: 1,
        sha256: sha256(data),
      });
      const row = await env.db('resources').where({ id }).first();
      expect(row).toMatchObject({ user_id: owner.userId, parent_id: folderId, storage_key: `${owner.deviceId}/${id}.txt`, content_sha256: sha256(data) });
      expect(await stored.text(`${owner.deviceId}/${id}.txt`)).toBe(data.toString());
      expect(await tusFiles()).toEqual([]);
      const feed = await owner.api.get('/v1/sync/changes');
      expect(feed.body.items.find((c: { id: string }) => c.id === id)).toMatchObject({ type: 'file', rev: 1, sha256: sha256(data) });
      // The upload itself is over: its URL is gone.
      expectHeadError(await raw.head(location), 404);
    });

    test('an upload completed by its creation (empty, or creation-with-upload) answers 201 with the File', async () => {
      const empty = await raw.create(0, { name: 'empty.txt' });
      expect(empty.status).toBe(201);
      expect(empty.body).toMatchObject({ name: 'empty.txt', size: 0, sha256: sha256('') });
      const data = Buffer.from('all at once');
      const withBody = await owner.api.request('POST', '/v1/uploads', {
        body: data,
        headers: {
          'tus-resumable': '1.0.0',
          'upload-length': String(data.length),
          'upload-metadata': encodeMetadata({ name: 'at-once.txt' }),
          'content-type': 'application/offset+octet-stream',
        },
      });
      expect(withBody.status).toBe(201);
      expect(withBody.body).toMatchObject({ name: 'at-once.txt', size: data.length, sha256: sha256(data) });
      const stock = await new Promise<string>((resolve, reject) => {
        const upload = new tus.Upload(Buffer.alloc(0), {
          endpoint: `${gateway.baseUrl}/v1/uploads`,
          headers: { Authorization: `Bearer ${owner.token}` },
          metadata: { name: 'empty-by-client.txt' },
          retryDelays: null,
          onError: reject,
          onSuccess: ({ lastResponse }) => resolve(lastResponse.getBody()),
        });
        upload.start();
      });
      expect(JSON.parse(stock)).toMatchObject({ name: 'empty-by-client.txt', size: 0 });
      expect(await tusFiles()).toEqual([]);
    });

    test('owner keys a client puts in Upload-Metadata are ignored: the upload stays its creator’s', async () => {
      const location = await raw.start(10, { name: 'claimed.txt', 'filesync-user': other.userId, 'filesync-device': newId() });
      expectHeadError(await new TusRaw(other.api).head(location), 404);
      expect((await raw.head(location)).status).toBe(200);
    });

    test('a name clash at completion is 409 NAME_CONFLICT, no row is added and the bytes are removed', async () => {
      const first = await raw.start(3, { name: 'same.txt' });
      expect((await raw.patch(first, 0, Buffer.from('one'))).status).toBe(200);
      const rows = await countRows(env.db, 'resources');
      const second = await raw.start(3, { name: 'same.txt' });
      expectError(await raw.patch(second, 0, Buffer.from('two')), 409, 'NAME_CONFLICT');
      expect(await countRows(env.db, 'resources')).toBe(rows);
      expect(await tusFiles()).toEqual([]);
      expect(await stored.staging()).toEqual([]);
    });

    test('an id already in use is 400 at completion, as with POST /files', async () => {
      const taken = newId();
      const location = await raw.start(3, { name: 'taken-id.txt', id: taken });
      await insertFolder(env.db, other.userId, 'theirs', null, { id: taken });
      expectError(await raw.patch(location, 0, Buffer.from('abc')), 400, 'INVALID_REQUEST');
      expect(await tusFiles()).toEqual([]);
    });

    test('bytes that do not match the sha256 metadata are 400 and nothing is kept', async () => {
      const before = await stored.everything();
      const location = await raw.start(4, { name: 'digest.bin', sha256: sha256('else') });
      expectError(await raw.patch(location, 0, Buffer.from('data')), 400, 'INVALID_REQUEST');
      expect(await stored.everything()).toEqual(before);
      expect(await stored.unfinishedMultipartUploads()).toEqual([]);
    });

    test('termination: DELETE removes the bytes and the upload is gone', async () => {
      const location = await raw.start(10, { name: 'gone.bin' });
      await raw.patch(location, 0, Buffer.from('01234'));
      const id = idOf(location);
      expect(await tusFiles()).toEqual(driver === 's3' ? [id, `${id}.info`, `${id}.part`] : [id, `${id}.json`]);
      const res = await raw.delete(location);
      expect(res.status).toBe(204);
      expect(await tusFiles()).toEqual([]);
      expectHeadError(await raw.head(location), 404);
    });

    test("the library's own refusals come in the contract shape: offset conflict, missing Tus-Resumable, unknown upload", async () => {
      const location = await raw.start(10, { name: 'shape.bin' });
      const conflict = await raw.patch(location, 3, Buffer.from('abc'));
      expect(conflict.status).toBe(409);
      expect(conflict.body).toEqual({ error: { code: 'INVALID_REQUEST', message: expect.any(String) } });
      const noVersion = await owner.api.request('HEAD', location);
      expect(noVersion.status).toBe(412);
      const bodyOf = await owner.api.request('PATCH', location, { body: 'x', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' } });
      expect(bodyOf.body).toEqual({ error: { code: 'PRECONDITION_FAILED', message: expect.any(String) } });
      expectHeadError(await raw.head(`/v1/uploads/${newId()}`), 404);
      expectHeadError(await raw.head('/v1/uploads/..%2F..%2Fetc'), 404);
      expectError(await owner.api.get(location), 404, 'NOT_FOUND');
      await raw.delete(location);
    });

    test('with fileId the last PATCH replaces that file’s content, as PUT /files/:id/content does: rev + 1, new bytes served, old ones kept as a version', async () => {
      const created = await owner.api.upload({}, { name: 'notes.txt', content: 'old content', type: 'text/plain' });
      expect(created.status).toBe(201);
      const oldKey = (await env.db('resources').where({ id: created.body.id }).first()).storage_key as string;
      const data = Buffer.from('new content, resumably');
      const location = await raw.start(data.length, { name: 'notes.txt', fileId: created.body.id, sha256: sha256(data) });
      await raw.patch(location, 0, data.subarray(0, 5));
      const done = await raw.patch(location, 5, data.subarray(5));
      expect(done.status).toBe(200);
      expect(done.body).toMatchObject({ id: created.body.id, name: 'notes.txt', size: data.length, sha256: sha256(data), rev: 2 });
      const content = await owner.api.get(`/v1/files/${created.body.id}/content`);
      expect(content.text).toBe(data.toString());
      expect(await stored.text(oldKey)).toBe('old content');
      expect(await env.db('file_versions').where({ file_id: created.body.id }).select('storage_key')).toEqual([{ storage_key: oldKey }]);
      expect(await tusFiles()).toEqual([]);
      const feed = await owner.api.get('/v1/sync/changes');
      expect(feed.body.items.find((c: { id: string }) => c.id === created.body.id)).toMatchObject({ rev: 2, sha256: sha256(data) });
    });

    test('with fileId, If-Match given at creation is checked: 412 at creation when it already fails, 412 at completion when the content changed meanwhile', async () => {
      const created = await owner.api.upload({}, { name: 'guarded.txt', content: 'version 1' });
      const etag = `"${sha256('version 1')}"`;
      expectError(await raw.create(3, { name: 'guarded.txt', fileId: created.body.id }, { 'if-match': `"${sha256('other')}"` }), 412, 'PRECONDITION_FAILED');
      const location = new URL((await raw.create(3, { name: 'guarded.txt', fileId: created.body.id }, { 'if-match': etag })).headers.get('location')!, gateway.baseUrl).pathname;
      const put = await owner.api.request('PUT', `/v1/files/${created.body.id}/content`, { body: 'version 2' });
      expect(put.status).toBe(200);
      expectError(await raw.patch(location, 0, Buffer.from('v3!')), 412, 'PRECONDITION_FAILED');
      expect((await owner.api.get(`/v1/files/${created.body.id}/content`)).text).toBe('version 2');
      expect(await tusFiles()).toEqual([]);
    });

    test('with fileId, a file that is gone by completion is 404 and the bytes are removed; another user’s file is 404 at creation', async () => {
      const created = await owner.api.upload({}, { name: 'doomed.txt', content: 'x' });
      expectError(await new TusRaw(other.api).create(3, { name: 'doomed.txt', fileId: created.body.id }), 404, 'NOT_FOUND');
      const location = await raw.start(3, { name: 'doomed.txt', fileId: created.body.id });
      expect((await owner.api.delete(`/v1/files/${created.body.id}`)).status).toBe(200);
      expectError(await raw.patch(location, 0, Buffer.from('abc')), 404, 'NOT_FOUND');
      expect(await tusFiles()).toEqual([]);
    });

    test('bytes of an upload in progress survive a gateway restart, and another gateway finishes it', async () => {
      const data = randomBytes(64 * 1024);
      const location = await raw.start(data.length, { name: 'restart.bin' });
      await raw.patch(location, 0, data.subarray(0, 1000));
      await gateway.close();
      gateway = await startGateway(env);
      const moved = new TusRaw(new Api(gateway.baseUrl, owner.token));
      expect((await moved.head(location)).headers.get('upload-offset')).toBe('1000');
      const second = await startGateway(env);
      try {
        const other = new TusRaw(new Api(second.baseUrl, owner.token));
        expect((await other.patch(location, 1000, data.subarray(1000, 5000))).status).toBe(204);
        const done = await moved.patch(location, 5000, data.subarray(5000));
        expect(done.status).toBe(200);
        expect(done.body).toMatchObject({ size: data.length, sha256: sha256(data) });
      } finally {
        await second.close();
      }
    });
  });

  describe('expiry', () => {
    let shortEnv: TestEnv;
    let shortGateway: RunningGateway;
    let expiry: MaintenanceWorkers;

    beforeAll(async () => {
      // 0.001 h = 3.6 s; the sweep then runs every second.
      shortEnv = await createTestEnv(onDriver(driver, { UPLOAD_EXPIRY_HOURS: '0.001' }));
      shortGateway = await startGateway(shortEnv);
      expiry = await startMaintenance(shortEnv.config, shortEnv.db, createLogger('worker', 'silent'));
    });

    afterAll(async () => {
      await expiry?.close();
      await shortGateway?.close();
      await shortEnv?.dropAll();
    });

    test('an unfinished upload expires (Upload-Expires says when) and the scheduled job removes its bytes', async () => {
      const { api } = await new Api(shortGateway.baseUrl).login(ADMIN.username, ADMIN.password);
      const client = new TusRaw(api);
      const created = await client.create(10, { name: 'slow.bin' });
      expect(created.status).toBe(201);
      const expires = Date.parse(created.headers.get('upload-expires')!);
      // An HTTP date a few seconds from the creation, not the default day.
      expect(Math.abs(expires - Date.now())).toBeLessThan(3600 * 1000);
      const location = new URL(created.headers.get('location')!, shortGateway.baseUrl).pathname;
      await client.patch(location, 0, Buffer.from('01234'));
      const short = new StoredContent(shortEnv);
      // The bytes and the info; on S3 also the multipart upload, which the expiry aborts.
      expect(await tusFiles(short)).toHaveLength(driver === 's3' ? 3 : 2);

      expect(await waitFor(async () => (await tusFiles(short)).length === 0, 20000, 200)).toBe(true);
      expect((await client.head(location)).status).toBe(404);

      const queue = new Queue(MAINTENANCE_QUEUE, { connection: redisOptions(shortEnv.config.redisUrl, 'producer'), prefix: shortEnv.config.queuePrefix });
      try {
        expect((await queue.getJobSchedulers()).map((s) => s.key)).toContain(EXPIRE_UPLOADS_JOB);
        // The run that removed the bytes finishes a moment later (it also ends the upload's reservation).
        const reported = async () =>
          (await queue.getCompleted()).some((job) => job.name === EXPIRE_UPLOADS_JOB && (job.returnvalue as { uploadsRemoved: number }).uploadsRemoved === 1);
        expect(await waitFor(reported, 10000, 200)).toBe(true);
      } finally {
        await queue.close();
      }
    });

    test('the dashboard lists the maintenance queue that runs the expiry', async () => {
      const res = await fetch(`${shortGateway.baseUrl}/admin/queues/api/queues`, {
        headers: { authorization: `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}` },
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { queues: Array<{ name: string }> };
      expect(body.queues.map((q) => q.name)).toContain(MAINTENANCE_QUEUE);
    });
  });
});
