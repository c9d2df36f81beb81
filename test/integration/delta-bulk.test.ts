import { randomBytes } from 'node:crypto';
import { newId } from '../../shared/ids';
import { BULK_MEDIA_TYPE, type BulkUploadHeader } from '../../shared/protocol/bulk';
import type { Api } from '../support/client';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { expectError, sha256 } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';

/*
 * Many small files together (docs/SYNC-CLIENT.md): one request creates or replaces many files, one
 * response brings many files' content; each file has its own result, as its single counterpart.
 */

function frames(files: { header: object; bytes?: Buffer }[], end = true): Buffer {
  const parts: Buffer[] = [];
  for (const f of files) {
    const json = Buffer.from(JSON.stringify(f.header));
    const length = Buffer.alloc(4);
    length.writeUInt32BE(json.length);
    parts.push(length, json, f.bytes ?? Buffer.alloc(0));
  }
  if (end) parts.push(Buffer.alloc(4));
  return Buffer.concat(parts);
}

/** Splits a bulk download into its headers and bytes. */
function readFrames(body: Buffer): { header: Record<string, unknown>; bytes: Buffer }[] {
  const out: { header: Record<string, unknown>; bytes: Buffer }[] = [];
  let at = 0;
  for (;;) {
    const length = body.readUInt32BE(at);
    at += 4;
    if (length === 0) break;
    const header = JSON.parse(body.subarray(at, at + length).toString('utf8')) as Record<string, unknown>;
    at += length;
    const size = Number(header.size);
    out.push({ header, bytes: body.subarray(at, at + size) });
    at += size;
  }
  expect(at).toBe(body.length);
  return out;
}

describe.each(DRIVERS)('bulk transfers on the %s driver', (driver) => {
  let stack: TestStack;
  let api: Api;
  let stored: StoredContent;

  beforeAll(async () => {
    stack = await startStack(onDriver(driver));
    stored = new StoredContent(stack.env);
    ({ api } = await stack.admin.createUser(`bulk${driver}`));
  });

  afterAll(async () => {
    await stack?.close();
  });

  const bulkUpload = (body: Buffer) => api.request('POST', '/v1/files/bulk', { body, headers: { 'content-type': BULK_MEDIA_TYPE } });

  test('creates and replaces many files in one request, each with its own result', async () => {
    const existing = await api.upload({}, { name: `old-${newId()}.txt`, content: 'old' });
    const taken = `taken-${newId()}.txt`;
    await api.upload({}, { name: taken, content: 'here first' });
    const a = randomBytes(4096);
    const b = randomBytes(10);
    const ids = [newId(), newId()];
    const header = (h: BulkUploadHeader) => h;

    const res = await bulkUpload(
      frames([
        { header: header({ id: ids[0], name: 'a.bin', size: a.length, sha256: sha256(a) }), bytes: a },
        { header: header({ name: 'bad.bin', size: 3, sha256: sha256('not these') }), bytes: Buffer.from('abc') },
        { header: header({ fileId: existing.body.id, ifMatch: sha256('old'), size: b.length }), bytes: b },
        { header: header({ name: taken, size: 1 }), bytes: Buffer.from('x') },
        { header: header({ id: ids[1], name: 'empty.txt', size: 0 }) },
      ]),
    );

    expect(res.status).toBe(200);
    const results = res.body.results as { status: number; file?: { id: string; sha256: string; rev: number }; error?: { code: string } }[];
    expect(results.map((r) => r.status)).toEqual([201, 400, 200, 409, 201]);
    expect(results[0]!.file).toMatchObject({ id: ids[0], name: 'a.bin', size: a.length, sha256: sha256(a), rev: 1 });
    expect(results[1]!.error).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(results[2]!.file).toMatchObject({ id: existing.body.id, sha256: sha256(b), rev: 2 });
    expect(results[3]!.error).toMatchObject({ code: 'NAME_CONFLICT' });
    expect(results[4]!.file).toMatchObject({ id: ids[1], size: 0 });
    const listed = await api.get('/v1/files?limit=100');
    expect(listed.body.items.map((f: { name: string }) => f.name)).not.toContain('bad.bin');
    expect(await stored.staging()).toEqual([]);

    const down = await fetch(`${api.baseUrl}/v1/files/bulk/content`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ids: [ids[0], existing.body.id, newId(), ids[1]] }),
    });
    expect(down.status).toBe(200);
    expect(down.headers.get('content-type')).toBe(BULK_MEDIA_TYPE);
    const got = readFrames(Buffer.from(await down.arrayBuffer()));
    expect(got.map((f) => f.header.id)).toEqual([ids[0], existing.body.id, expect.any(String), ids[1]]);
    expect(got[0]!.bytes.equals(a)).toBe(true);
    expect(got[0]!.header).toMatchObject({ size: a.length, sha256: sha256(a), rev: 1 });
    expect(got[1]!.bytes.equals(b)).toBe(true);
    expect(got[2]!.header).toMatchObject({ size: 0, error: { code: 'NOT_FOUND' } });
    expect(got[3]!.bytes.length).toBe(0);
  });

  test('files staged together keep the request order: of two files of one name, the first is created and the later refused', async () => {
    const filler = (i: number) => ({ header: { name: `fill-${i}-${newId()}.bin`, size: 4096 }, bytes: randomBytes(4096) });
    // Six pairs of one name each; in a pair the first is the larger, so its write and flush take longer
    // than those of the later one, staged beside it.
    const pairs = Array.from({ length: 6 }, () => ({ name: `twice-${newId()}.txt`, first: randomBytes(250_000), later: randomBytes(10) }));
    const res = await bulkUpload(
      frames([
        ...pairs.flatMap((p, i) => [filler(i), { header: { name: p.name, size: p.first.length }, bytes: p.first }, { header: { name: p.name, size: p.later.length }, bytes: p.later }]),
        ...Array.from({ length: 20 }, (_, i) => filler(i + 6)),
      ]),
    );

    expect(res.status).toBe(200);
    const results = res.body.results as { status: number; file?: { id: string; sha256: string }; error?: { code: string } }[];
    expect(results).toHaveLength(38);
    for (const [i, p] of pairs.entries()) {
      expect(results[i * 3 + 1]).toMatchObject({ status: 201, file: { sha256: sha256(p.first) } });
      expect(results[i * 3 + 2]).toMatchObject({ status: 409, error: { code: 'NAME_CONFLICT' } });
    }
    expect(results.filter((r) => r.status === 201)).toHaveLength(32);
    const down = await fetch(`${api.baseUrl}/v1/files/${results[1]!.file!.id}/content`, { headers: { authorization: `Bearer ${api.token}` } });
    expect(Buffer.from(await down.arrayBuffer()).equals(pairs[0]!.first)).toBe(true);
    expect(await stored.staging()).toEqual([]);
  });

  test('many files into one folder, one into a folder that is not there; a large one comes down whole among small ones', async () => {
    const folderId = newId();
    const made = await api.post('/v1/sync/ops', { ops: [{ opId: 1, type: 'create', resourceId: folderId, payload: { resourceType: 'folder', name: `in-${newId()}` } }] });
    expect(made.status).toBe(200);
    const small = Array.from({ length: 20 }, () => randomBytes(4096));
    const large = randomBytes(300 * 1024 + 7);
    const ids = [...small, large].map(() => newId());
    const res = await bulkUpload(
      frames([
        ...[...small, large].map((bytes, i) => ({ header: { id: ids[i], name: `f${i}.bin`, folderId, size: bytes.length }, bytes })),
        { header: { name: 'lost.bin', folderId: newId(), size: 1 }, bytes: Buffer.from('y') },
      ]),
    );

    expect(res.status).toBe(200);
    const results = res.body.results as { status: number; file?: { id: string; folderId: string | null }; error?: { code: string } }[];
    expect(results.map((r) => r.status)).toEqual([...ids.map(() => 201), 404]);
    expect(results.slice(0, ids.length).map((r) => r.file?.folderId)).toEqual(ids.map(() => folderId));
    expect((await api.get(`/v1/files?folderId=${folderId}&limit=100`)).body.items).toHaveLength(ids.length);

    const down = await fetch(`${api.baseUrl}/v1/files/bulk/content`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ids: [ids[0], ids[ids.length - 1], folderId, ...ids.slice(1, -1), ids[0]] }),
    });
    const got = readFrames(Buffer.from(await down.arrayBuffer()));
    expect(got).toHaveLength(ids.length + 2);
    expect(got[1]!.bytes.equals(large)).toBe(true);
    expect(got[1]!.header).toMatchObject({ size: large.length, sha256: sha256(large) });
    expect(got[2]!.header).toMatchObject({ id: folderId, size: 0, error: { code: 'NOT_FOUND' } });
    const sent = new Map([...small, large].map((bytes, i) => [ids[i]!, bytes]));
    expect(got.map((f) => String(f.header.id))).toEqual([ids[0], ids[ids.length - 1], folderId, ...ids.slice(1, -1), ids[0]]);
    expect(got.filter((f) => !f.header.error).every((f) => f.bytes.equals(sent.get(String(f.header.id))!))).toBe(true);
    expect(await stored.staging()).toEqual([]);
  });

  test('a body cut inside a file: 400 naming the results of the files before it, nothing staged', async () => {
    const first = randomBytes(100);
    const cut = frames([{ header: { name: `c-${newId()}.bin`, size: first.length }, bytes: first }, { header: { name: 'cut.bin', size: 1000 }, bytes: randomBytes(10) }], false);

    const res = await bulkUpload(cut);

    expectError(res, 400, 'INVALID_REQUEST');
    expect(res.body.error.details.results).toEqual([{ status: 201, file: expect.objectContaining({ sha256: sha256(first) }) }]);
    expect(await stored.staging()).toEqual([]);
  });

  test('more than the upload limit or a malformed request is refused', async () => {
    expectError(await bulkUpload(Buffer.from([0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0, 0])), 400, 'INVALID_REQUEST');
    expectError(await api.post('/v1/files/bulk/content', { ids: 'x' }), 400, 'INVALID_REQUEST');
    expectError(await api.post('/v1/files/bulk/content', { ids: [] }), 400, 'INVALID_REQUEST');
  });
});
