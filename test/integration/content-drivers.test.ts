import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { ContentRepository } from '../../shared/db/repositories/content.repository';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { UsageRepository } from '../../shared/quota/usage.repository';
import type { ContentStore } from '../../shared/storage/content.store';
import { PART_SIZE, S3ContentStore } from '../../shared/storage/s3/s3.store';
import { createContentStore } from '../../shared/storage/store.factory';
import { Fsck } from '../../services/maintenance/fsck';
import { DerivedRepair } from '../../shared/db/derived/derived.repair';
import type { Api } from '../support/client';
import { basic, createAppPassword, DavClient } from '../support/dav';
import { expectError, listFilesUnder } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';
import { TusRaw } from '../support/tus';

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const LIMIT = 24 * 1024 * 1024;

/**
 * The content paths on each driver, from one body: what a client sees must not depend on where the
 * bytes live. On S3 (the suite's RGW) nothing may land in UPLOAD_DIR either.
 */
describe.each(['local', 's3'] as const)('content on the %s driver', (driver) => {
  let stack: TestStack;
  let store: ContentStore;
  let api: Api;
  let deviceId: string;

  beforeAll(async () => {
    stack = await startStack({ STORAGE_DRIVER: driver, MAX_UPLOAD_BYTES: String(LIMIT) });
    store = createContentStore(stack.env.config);
    ({ api, deviceId } = await stack.admin.createUser('mover'));
  });

  afterAll(async () => {
    if (driver === 's3') expect(await listFilesUnder(stack.env.uploadDir)).toEqual([]);
    await stack?.close();
  });

  const keys = async () => {
    const out: string[] = [];
    for await (const o of store.walk()) out.push(o.key);
    return out.sort();
  };

  /** Multipart uploads the bucket holds unfinished under this environment's prefix (none on disk). */
  const openMultipartUploads = async () => {
    if (!(store instanceof S3ContentStore)) return 0;
    const res = await store.client.send(new ListMultipartUploadsCommand({ Bucket: store.bucket, Prefix: store.config.prefix }));
    return (res.Uploads ?? []).length;
  };

  test('a file larger than one part uploads, reads back whole and by range, with its digest', async () => {
    const body = randomBytes(PART_SIZE + 1024 * 1024 + 123);
    const created = await api.upload({ sha256: sha256(body) }, { name: 'big.bin', content: body });
    expect(created.status).toBe(201);
    expect(created.body.sha256).toBe(sha256(body));

    const whole = await fetch(`${api.baseUrl}/v1/files/${created.body.id}/content`, { headers: { authorization: `Bearer ${api.token}` } });
    expect(whole.status).toBe(200);
    expect(whole.headers.get('repr-digest')).toBe(`sha-256=:${createHash('sha256').update(body).digest('base64')}:`);
    expect(Buffer.from(await whole.arrayBuffer()).equals(body)).toBe(true);

    const start = 4 * 1024 * 1024 + 7;
    const end = start + 1024 * 1024 - 1;
    const part = await fetch(`${api.baseUrl}/v1/files/${created.body.id}/content`, {
      headers: { authorization: `Bearer ${api.token}`, range: `bytes=${start}-${end}` },
    });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(body.subarray(start, end + 1))).toBe(true);

    const row = await stack.env.db('resources').where({ id: created.body.id }).first('storage_key');
    expect(row.storage_key).toBe(`${deviceId}/${created.body.id}.bin`);
    expect(await store.stat(row.storage_key)).toMatchObject({ size: body.length });
  });

  test('a replacement serves the old content until it commits, then only the new one is stored', async () => {
    const created = await api.upload({}, { name: 'note.txt', content: 'first version' });
    const { storage_key: oldKey } = await stack.env.db('resources').where({ id: created.body.id }).first('storage_key');

    const replaced = await api.request('PUT', `/v1/files/${created.body.id}/content`, {
      body: 'second, longer version',
      headers: { 'content-type': 'text/plain', 'if-match': `"${created.body.sha256}"` },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.sha256).toBe(sha256(Buffer.from('second, longer version')));
    expect((await api.get(`/v1/files/${created.body.id}/content`)).text).toBe('second, longer version');

    const { storage_key: newKey } = await stack.env.db('resources').where({ id: created.body.id }).first('storage_key');
    expect(newKey).not.toBe(oldKey);
    expect(await store.stat(newKey)).toBeDefined();
  });

  test('a body over the limit is refused with 413, and neither an object nor a multipart upload is left', async () => {
    const before = await keys();
    const res = await api.request('PUT', `/v1/files/${(await api.upload({}, { name: 'small.txt', content: 'x' })).body.id}/content`, {
      body: randomBytes(LIMIT + 1),
    });
    expectError(res, 413, 'FILE_TOO_LARGE');
    const after = (await keys()).filter((k) => !before.includes(k));
    // Only the small file's own content is new.
    expect(after.filter((k) => k.startsWith('.staging/'))).toEqual([]);
    expect(await openMultipartUploads()).toBe(0);
  });

  test('a stage cut off after a part went out, or passing the limit there, leaves neither an object nor a multipart upload', async () => {
    const before = await keys();
    const cutOff = Readable.from(
      (async function* () {
        yield randomBytes(PART_SIZE + 1024 * 1024);
        throw new Error('client gone');
      })(),
    );
    await expect(store.stage(cutOff, { maxBytes: LIMIT })).rejects.toThrow('client gone');
    const tooLarge = Readable.from([randomBytes(PART_SIZE), randomBytes(LIMIT - PART_SIZE + 1)]);
    await expect(store.stage(tooLarge, { maxBytes: LIMIT })).rejects.toMatchObject({ code: 'FILE_TOO_LARGE' });
    expect((await keys()).filter((k) => !before.includes(k))).toEqual([]);
    expect(await openMultipartUploads()).toBe(0);
  });

  test('a digest that does not match the bytes is refused, and nothing is kept', async () => {
    const before = await keys();
    const res = await api.upload({ sha256: '0'.repeat(64) }, { name: 'wrong.txt', content: 'these bytes' });
    expectError(res, 400, 'INVALID_REQUEST');
    expect(await keys()).toEqual(before);
  });

  test('a purge from the trash removes the content from the store', async () => {
    const created = await api.upload({}, { name: 'doomed.txt', content: 'short-lived' });
    const { storage_key: key } = await stack.env.db('resources').where({ id: created.body.id }).first('storage_key');
    expect((await api.delete(`/v1/files/${created.body.id}`)).status).toBe(200);
    expect(await store.stat(key)).toBeDefined();

    expect((await api.delete(`/v1/trash/${created.body.id}`)).status).toBe(204);
    expect(await store.stat(key)).toBeUndefined();
  });

  test('a resumable upload in several PATCHes becomes a file; a terminated one leaves nothing behind', async () => {
    const tus = new TusRaw(api);
    const body = randomBytes(6 * 1024 * 1024 + 5);
    const location = await tus.start(body.length, { name: 'resumed.bin' });
    expect((await tus.patch(location, 0, body.subarray(0, 5 * 1024 * 1024 + 1))).status).toBe(204);
    expect((await tus.head(location)).headers.get('upload-offset')).toBe(String(5 * 1024 * 1024 + 1));
    const last = await tus.patch(location, 5 * 1024 * 1024 + 1, body.subarray(5 * 1024 * 1024 + 1));
    expect(last.status).toBe(200);
    expect(last.body.sha256).toBe(sha256(body));
    const read = await fetch(`${api.baseUrl}/v1/files/${last.body.id}/content`, { headers: { authorization: `Bearer ${api.token}` } });
    expect(Buffer.from(await read.arrayBuffer()).equals(body)).toBe(true);

    const dropped = await tus.start(3 * 1024 * 1024, { name: 'dropped.bin' });
    expect((await tus.patch(dropped, 0, randomBytes(1024 * 1024))).status).toBe(204);
    expect((await tus.delete(dropped)).status).toBe(204);
    expect((await tus.head(dropped)).status).toBe(404);
    expect(await openMultipartUploads()).toBe(0);
  });

  test('WebDAV PUT creates and replaces content in the store under the app password\'s device, read back by Range', async () => {
    const password = await createAppPassword(api, 'dav on the store');
    const dav = new DavClient(api.baseUrl, basic('mover', password.password));
    expect((await dav.put('/dav/dav-note.txt', 'written over WebDAV')).status).toBe(201);
    const file = (await api.get('/v1/files')).body.items.find((f: { name: string }) => f.name === 'dav-note.txt');
    const { storage_key: first } = await stack.env.db('resources').where({ id: file.id }).first('storage_key');
    expect(first).toBe(`${password.deviceId}/${file.id}.txt`);
    expect(await store.stat(first)).toMatchObject({ size: 'written over WebDAV'.length });

    expect((await dav.put('/dav/dav-note.txt', 'replaced over WebDAV')).status).toBe(204);
    const ranged = await dav.request('GET', '/dav/dav-note.txt', { headers: { range: 'bytes=0-7' } });
    expect(ranged.status).toBe(206);
    expect(ranged.text).toBe('replaced');
    const { storage_key: second } = await stack.env.db('resources').where({ id: file.id }).first('storage_key');
    expect(second).not.toBe(first);
    expect(await store.stat(second)).toMatchObject({ size: 'replaced over WebDAV'.length });
  });

  test('the readiness check reports the content store', async () => {
    const res = await api.get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body.storage).toBe(true);
  });

  test('fsck finds the store clean, then reports content that went missing', async () => {
    const fsck = () => new Fsck(store, new ContentRepository(stack.env.db), new OwnerTransactions(stack.env.db), new UsageRepository(stack.env.db), new DerivedRepair(stack.env.db)).run({ repair: false, orphanMinAgeMs: 0, stagingMinAgeMs: 3600_000 });
    expect(await fsck()).toMatchObject({ orphans: [], missing: [] });

    const created = await api.upload({}, { name: 'lost.txt', content: 'soon gone' });
    const { storage_key: key } = await stack.env.db('resources').where({ id: created.body.id }).first('storage_key');
    await store.remove(key);
    const report = await fsck();
    expect(report.missing.map((m) => m.id)).toEqual([created.body.id]);
  });
});
