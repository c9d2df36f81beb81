import { randomBytes } from 'node:crypto';
import { newId } from '../../shared/ids';
import { chunksOf, DELTA_MEDIA_TYPE, DELTA_MIN_BYTES, DELTA_RECORD, packChunks, unpackChunks, type ContentChunk } from '../../shared/protocol/chunking';
import type { Api } from '../support/client';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { expectError, sha256 } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';

/*
 * Chunk lists and delta uploads (docs/SYNC-CLIENT.md, "Changes that move only what changed"): a
 * delta is a normal content replacement, and one that fails leaves nothing behind.
 */

type Record = { copy: [number, number] } | { data: Buffer } | { list: ContentChunk[] } | 'end';

function deltaBody(records: Record[]): Buffer {
  const parts: Buffer[] = [];
  for (const r of records) {
    if (r === 'end') parts.push(Buffer.of(DELTA_RECORD.end));
    else if ('list' in r) {
      const head = Buffer.alloc(9);
      head[0] = DELTA_RECORD.list;
      head.writeBigUInt64BE(BigInt(r.list.length), 1);
      parts.push(head, packChunks(r.list));
    }
    else if ('copy' in r) {
      const head = Buffer.alloc(17);
      head[0] = DELTA_RECORD.copy;
      head.writeBigUInt64BE(BigInt(r.copy[0]), 1);
      head.writeBigUInt64BE(BigInt(r.copy[1]), 9);
      parts.push(head);
    } else {
      const head = Buffer.alloc(9);
      head[0] = DELTA_RECORD.data;
      head.writeBigUInt64BE(BigInt(r.data.length), 1);
      parts.push(head, r.data);
    }
  }
  return Buffer.concat(parts);
}

const digest = (hex: string) => `sha-256=:${Buffer.from(hex, 'hex').toString('base64')}:`;

describe.each(DRIVERS)('delta uploads on the %s driver', (driver) => {
  let stack: TestStack;
  let api: Api;
  let userId: string;
  let stored: StoredContent;

  beforeAll(async () => {
    stack = await startStack(onDriver(driver, { MAX_VERSIONS: '1' }));
    stored = new StoredContent(stack.env);
    ({ api, userId } = await stack.admin.createUser(`delta${driver}`));
  });

  afterAll(async () => {
    await stack?.close();
  });

  async function fileWith(content: Buffer): Promise<{ id: string; rev: number }> {
    const res = await api.upload({}, { name: `f-${newId()}.bin`, content });
    expect(res.status).toBe(201);
    return { id: res.body.id, rev: res.body.rev };
  }

  const sendDelta = (id: string, body: Buffer, base: string, target: string) =>
    api.request('POST', `/v1/files/${id}/delta`, {
      body,
      headers: { 'content-type': DELTA_MEDIA_TYPE, 'if-match': `"${base}"`, 'repr-digest': digest(target) },
    });

  async function content(id: string): Promise<Buffer> {
    const res = await fetch(`${api.baseUrl}/v1/files/${id}/content`, { headers: { authorization: `Bearer ${api.token}` } });
    return Buffer.from(await res.arrayBuffer());
  }

  test('GET chunks gives the content-defined chunk list of the current content', async () => {
    const bytes = randomBytes(3 * 1024 * 1024);
    const { id, rev } = await fileWith(bytes);

    const res = await api.get(`/v1/files/${id}/chunks`);

    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(`"${sha256(bytes)}"`);
    expect(res.body).toMatchObject({ fileId: id, rev, size: bytes.length, sha256: sha256(bytes), chunking: { algorithm: 'fastcdc-gear32-v1' } });
    expect(res.body.chunks).toEqual(chunksOf(bytes));
    expect(res.body.chunks.length).toBeGreaterThan(3);
  });

  test('a delta inserting bytes at the start and overwriting the middle becomes the new content, the old one kept as a version', async () => {
    const base = randomBytes(4 * 1024 * 1024);
    const { id, rev } = await fileWith(base);
    const inserted = randomBytes(100);
    const middle = randomBytes(300_000);
    const target = Buffer.concat([inserted, base.subarray(0, 1_000_000), middle, base.subarray(1_300_000)]);

    const res = await sendDelta(
      id,
      deltaBody([{ data: inserted }, { copy: [0, 1_000_000] }, { data: middle }, { copy: [1_300_000, base.length - 1_300_000] }, 'end']),
      sha256(base),
      sha256(target),
    );

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, size: target.length, sha256: sha256(target), rev: rev + 1 });
    expect(res.headers.get('filesync-delta-copied')).toBe(String(base.length - 300_000));
    expect((await content(id)).equals(target)).toBe(true);
    const versions = await api.get(`/v1/files/${id}/versions`);
    expect(versions.body.items.map((v: { sha256: string }) => v.sha256)).toContain(sha256(base));
    expect((await api.get(`/v1/files/${id}/chunks`)).body.chunks).toEqual(chunksOf(target));
    expect(await stored.staging()).toEqual([]);
  });

  test('a delta that carries the new content\'s chunk list: checked, then kept as the content\'s list', async () => {
    const base = randomBytes(2 * 1024 * 1024);
    const { id } = await fileWith(base);
    const target = Buffer.concat([base, randomBytes(70_000)]);

    const res = await sendDelta(
      id,
      deltaBody([{ list: chunksOf(target) }, { copy: [0, base.length] }, { data: target.subarray(base.length) }, 'end']),
      sha256(base),
      sha256(target),
    );

    expect(res.status).toBe(200);
    expect((await content(id)).equals(target)).toBe(true);
    expect((await api.get(`/v1/files/${id}/chunks`)).body.chunks).toEqual(chunksOf(target));
  });

  test.each([
    ['a chunk hash that is not its bytes', (list: ContentChunk[]) => list.map((c, i) => (i === 1 ? { ...c, sha256: sha256('other') } : c))],
    ['lengths that stop short of the content', (list: ContentChunk[]) => list.slice(0, -1)],
    ['a chunk below the smallest length', (list: ContentChunk[]) => [{ offset: 0, length: 10, sha256: sha256('x') }, ...list]],
  ])('a chunk list with %s: 400, the content unchanged, nothing staged', async (_name, spoil) => {
    const base = randomBytes(1024 * 1024);
    const { id, rev } = await fileWith(base);
    const target = Buffer.concat([randomBytes(10), base]);

    const res = await sendDelta(
      id,
      deltaBody([{ list: spoil(chunksOf(target)) }, { data: target.subarray(0, 10) }, { copy: [0, base.length] }, 'end']),
      sha256(base),
      sha256(target),
    );

    expectError(res, 400, 'INVALID_REQUEST');
    expect((await api.get(`/v1/files/${id}`)).body).toMatchObject({ rev, sha256: sha256(base) });
    expect(await stored.staging()).toEqual([]);
  });

  test('with the base\'s list kept, a delta whose copied chunks are the base\'s is taken, and a copied chunk the list gives another hash is still refused', async () => {
    const base = randomBytes(2 * 1024 * 1024);
    const { id, rev } = await fileWith(base);
    expect((await api.get(`/v1/files/${id}/chunks`)).status).toBe(200);
    const target = Buffer.concat([base, randomBytes(70_000)]);
    const list = chunksOf(target);
    const body = (chunks: ContentChunk[]) => deltaBody([{ list: chunks }, { copy: [0, base.length] }, { data: target.subarray(base.length) }, 'end']);

    // The second chunk's bytes are the base's second chunk: a list that says otherwise is not taken.
    const spoiled = await sendDelta(id, body(list.map((c, i) => (i === 1 ? { ...c, sha256: sha256('other') } : c))), sha256(base), sha256(target));
    expectError(spoiled, 400, 'INVALID_REQUEST');
    expect((await api.get(`/v1/files/${id}`)).body).toMatchObject({ rev, sha256: sha256(base) });

    const res = await sendDelta(id, body(list), sha256(base), sha256(target));
    expect(res.status).toBe(200);
    expect((await content(id)).equals(target)).toBe(true);
    expect((await api.get(`/v1/files/${id}/chunks`)).body.chunks).toEqual(list);
  });

  test('a base replaced meanwhile: 412 with the current rev and SHA-256, nothing staged', async () => {
    const base = randomBytes(200_000);
    const { id } = await fileWith(base);
    const now = randomBytes(1000);
    const put = await api.request('PUT', `/v1/files/${id}/content`, { body: now });
    const target = Buffer.concat([base, randomBytes(10)]);

    const res = await sendDelta(id, deltaBody([{ copy: [0, base.length] }, { data: target.subarray(base.length) }, 'end']), sha256(base), sha256(target));

    expectError(res, 412, 'PRECONDITION_FAILED');
    expect(res.body.error.details).toEqual({ rev: put.body.rev, sha256: sha256(now) });
    expect((await content(id)).equals(now)).toBe(true);
    expect(await stored.staging()).toEqual([]);
  });

  test('a wrong declared SHA-256: 400, the content unchanged, nothing staged', async () => {
    const base = randomBytes(200_000);
    const { id, rev } = await fileWith(base);

    const res = await sendDelta(id, deltaBody([{ copy: [0, 1000] }, 'end']), sha256(base), sha256('something else'));

    expectError(res, 400, 'INVALID_REQUEST');
    const after = await api.get(`/v1/files/${id}`);
    expect(after.body).toMatchObject({ rev, sha256: sha256(base) });
    expect(await stored.staging()).toEqual([]);
  });

  test.each([
    ['a copy past the end of the base', (size: number) => deltaBody([{ copy: [size - 10, 11] }, 'end'])],
    ['an unknown record', () => Buffer.from('Xgarbage')],
    ['a body cut inside a record', () => deltaBody([{ data: Buffer.alloc(100) }]).subarray(0, 50)],
    ['no end record', () => deltaBody([{ copy: [0, 10] }])],
    ['bytes after the end record', () => Buffer.concat([deltaBody([{ copy: [0, 10] }, 'end']), Buffer.from('more')])],
  ])('%s: 400 and nothing changes', async (_name, body) => {
    const base = randomBytes(100_000);
    const { id, rev } = await fileWith(base);

    const res = await sendDelta(id, body(base.length), sha256(base), sha256(base.subarray(0, 10)));

    expectError(res, 400, 'INVALID_REQUEST');
    expect((await api.get(`/v1/files/${id}`)).body).toMatchObject({ rev, sha256: sha256(base) });
    expect(await stored.staging()).toEqual([]);
  });

  test('without If-Match or Repr-Digest: 400', async () => {
    const base = randomBytes(1000);
    const { id } = await fileWith(base);
    const body = deltaBody([{ copy: [0, 1000] }, 'end']);

    expectError(await api.request('POST', `/v1/files/${id}/delta`, { body, headers: { 'repr-digest': digest(sha256(base)) } }), 400, 'INVALID_REQUEST');
    expectError(await api.request('POST', `/v1/files/${id}/delta`, { body, headers: { 'if-match': `"${sha256(base)}"` } }), 400, 'INVALID_REQUEST');
  });

  test('another user\'s file: 404 for chunks and delta', async () => {
    const base = randomBytes(1000);
    const { id } = await fileWith(base);
    const other = (await stack.admin.createUser(`other${driver}`)).api;

    expectError(await other.get(`/v1/files/${id}/chunks`), 404, 'NOT_FOUND');
    const res = await other.request('POST', `/v1/files/${id}/delta`, {
      body: deltaBody([{ copy: [0, 1000] }, 'end']),
      headers: { 'if-match': `"${sha256(base)}"`, 'repr-digest': digest(sha256(base)) },
    });
    expectError(res, 404, 'NOT_FOUND');
  });

  test('over the quota: 507, the content unchanged, nothing staged', async () => {
    const { api: small, userId: smallId } = await stack.admin.createUser(`quota${driver}`);
    const base = randomBytes(50_000);
    const up = await small.upload({}, { name: 'q.bin', content: base });
    await stack.admin.patch(`/v1/users/${smallId}`, { quotaBytes: 70_000 });
    const target = Buffer.concat([base, randomBytes(30_000)]);

    const res = await small.request('POST', `/v1/files/${up.body.id}/delta`, {
      body: deltaBody([{ copy: [0, base.length] }, { data: target.subarray(base.length) }, 'end']),
      headers: { 'if-match': `"${sha256(base)}"`, 'repr-digest': digest(sha256(target)) },
    });

    expectError(res, 507, 'QUOTA_EXCEEDED');
    expect((await small.get(`/v1/files/${up.body.id}`)).body.sha256).toBe(sha256(base));
    expect(await stored.staging()).toEqual([]);
  });

  test('a whole upload from 4 MiB on gets its chunk list made by a worker after the commit; a smaller one gets none', async () => {
    const large = randomBytes(DELTA_MIN_BYTES + 1000);
    const small = randomBytes(DELTA_MIN_BYTES - 1);
    // The small one first: jobs run one at a time in order, so had it been enqueued, its list would be there first.
    const { id: smallId } = await fileWith(small);
    const { id } = await fileWith(large);
    const keyOf = async (fileId: string) => (await stack.env.db('resources').where({ id: fileId, user_id: userId }).first('storage_key')).storage_key as string;
    const listOf = async (fileId: string) => stack.env.db('content_chunk_lists').where({ storage_key: await keyOf(fileId) }).first();

    for (let waited = 0; !(await listOf(id)) && waited < 30_000; waited += 100) await new Promise((r) => setTimeout(r, 100));

    const kept = await listOf(id);
    expect(kept).toBeDefined();
    expect(unpackChunks(kept.chunks)).toEqual(chunksOf(large));
    expect((await api.get(`/v1/files/${id}/chunks`)).body.chunks).toEqual(chunksOf(large));
    expect(await listOf(smallId)).toBeUndefined();
  });

  test('a chunk list goes away with its content', async () => {
    const first = randomBytes(300_000);
    const { id } = await fileWith(first);
    expect((await api.get(`/v1/files/${id}/chunks`)).status).toBe(200);
    // This file's lists only: the workers may be keeping lists of other tests' large uploads meanwhile.
    const lists = async () => Number((await stack.env.db('content_chunk_lists').where('storage_key', 'like', `%/${id}%`).count({ n: '*' }))[0]!.n);
    const before = await lists();
    const key = (await stack.env.db('resources').where({ id, user_id: userId }).first('storage_key')).storage_key as string;

    // MAX_VERSIONS is 1: the second replacement drops the first content.
    await api.request('PUT', `/v1/files/${id}/content`, { body: randomBytes(10) });
    await api.request('PUT', `/v1/files/${id}/content`, { body: randomBytes(10) });

    expect(await stored.exists(key)).toBe(false);
    expect(await stack.env.db('content_chunk_lists').where({ storage_key: key }).first()).toBeUndefined();
    expect(await lists()).toBe(before - 1);
  });
});
