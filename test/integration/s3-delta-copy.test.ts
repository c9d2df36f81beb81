import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { newId } from '../../shared/ids';
import { DELTA_MEDIA_TYPE, DELTA_RECORD } from '../../shared/protocol/chunking';
import type { ByteRange } from '../../shared/storage/content.store';
import { MIN_PART, type S3BaseCopyStaging } from '../../shared/storage/s3/s3.base-copy';
import type { S3ContentStore } from '../../shared/storage/s3/s3.store';
import type { Api } from '../support/client';
import { onDriver, StoredContent } from '../support/drivers';
import { expectError, sha256 } from '../support/fixtures';
import { startStack, type TestStack } from '../support/stack';

/*
 * Delta uploads on S3 (the suite's RGW): long unchanged stretches of the base are copied in the
 * bucket (UploadPartCopy) instead of sent again, the content comes out byte for byte, and a failure
 * leaves neither a staging object nor an open multipart upload.
 */

const MiB = 1024 * 1024;
type Segment = { copy: [number, number] } | { data: Buffer };

let stack: TestStack;
let api: Api;
let stored: StoredContent;
let store: S3ContentStore;

beforeAll(async () => {
  stack = await startStack(onDriver('s3'));
  stored = new StoredContent(stack.env);
  store = stored.store as S3ContentStore;
  ({ api } = await stack.admin.createUser('deltacopy'));
});

afterAll(async () => {
  await stack?.close();
});

/** Everything staging holds, and every multipart upload left open anywhere under the test's prefix. */
async function leftovers(): Promise<string[]> {
  const open: string[] = [];
  for await (const u of store.multipartUploads('')) open.push(`${u.key} (multipart)`);
  return [...(await stored.stagingEntries()), ...open];
}

function deltaBody(segments: Segment[]): Buffer {
  const parts: Buffer[] = [];
  for (const s of segments) {
    const head = Buffer.alloc('copy' in s ? 17 : 9);
    head[0] = 'copy' in s ? DELTA_RECORD.copy : DELTA_RECORD.data;
    head.writeBigUInt64BE(BigInt('copy' in s ? s.copy[0] : s.data.length), 1);
    if ('copy' in s) head.writeBigUInt64BE(BigInt(s.copy[1]), 9);
    parts.push(head, ...('data' in s ? [s.data] : []));
  }
  return Buffer.concat([...parts, Buffer.of(DELTA_RECORD.end)]);
}

const assembled = (base: Buffer, segments: Segment[]) => Buffer.concat(segments.map((s) => ('copy' in s ? base.subarray(s.copy[0], s.copy[0] + s.copy[1]) : s.data)));

const sendDelta = (id: string, body: Buffer, base: string, target: string) =>
  api.request('POST', `/v1/files/${id}/delta`, {
    body,
    headers: { 'content-type': DELTA_MEDIA_TYPE, 'if-match': `"${base}"`, 'repr-digest': `sha-256=:${Buffer.from(target, 'hex').toString('base64')}:` },
  });

async function content(id: string): Promise<Buffer> {
  const res = await fetch(`${api.baseUrl}/v1/files/${id}/content`, { headers: { authorization: `Bearer ${api.token}` } });
  return Buffer.from(await res.arrayBuffer());
}

describe('POST /files/:id/delta on S3', () => {
  const base = randomBytes(24 * MiB);
  // 100 bytes inserted at the start, 300 KB written over the middle, 1 MiB appended.
  const segments: Segment[] = [{ data: randomBytes(100) }, { copy: [0, 12 * MiB] }, { data: randomBytes(300_000) }, { copy: [12 * MiB + 300_000, base.length - 12 * MiB - 300_000] }, { data: randomBytes(MiB) }];
  const target = assembled(base, segments);

  test('a 24 MiB file with stretches of 12 MiB unchanged: the new content byte for byte, nothing left in staging', async () => {
    const up = await api.upload({}, { name: `big-${newId()}.bin`, content: base });

    const res = await sendDelta(up.body.id, deltaBody(segments), sha256(base), sha256(target));

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ size: target.length, sha256: sha256(target), rev: up.body.rev + 1 });
    expect((await content(up.body.id)).equals(target)).toBe(true);
    expect(await leftovers()).toEqual([]);
  });

  test('a wrong declared SHA-256: 400, the content unchanged, no object and no multipart upload left', async () => {
    const up = await api.upload({}, { name: `big-${newId()}.bin`, content: base });
    const keys = await stored.keys();

    const res = await sendDelta(up.body.id, deltaBody(segments), sha256(base), sha256('something else'));

    expectError(res, 400, 'INVALID_REQUEST');
    expect((await api.get(`/v1/files/${up.body.id}`)).body).toMatchObject({ rev: up.body.rev, sha256: sha256(base) });
    expect(await stored.keys()).toEqual(keys);
    expect(await leftovers()).toEqual([]);
  });
});

describe('S3 staging with copies of a base', () => {
  const base = randomBytes(30 * MiB);
  const baseKey = `dev/base-${newId()}`;

  beforeAll(async () => {
    await store.place(await store.stage(Readable.from([base]), { maxBytes: base.length }), baseKey);
  });

  /** The bytes of `segments` as the delta assembly streams them, each copy announced before its bytes. */
  async function* source(staging: S3BaseCopyStaging, segments: Segment[], failAt = Infinity): AsyncGenerator<Buffer> {
    let position = 0;
    for (const s of segments) {
      const bytes = 'copy' in s ? base.subarray(s.copy[0], s.copy[0] + s.copy[1]) : s.data;
      if ('copy' in s) staging.copying(position, { start: s.copy[0], end: s.copy[0] + s.copy[1] - 1 } satisfies ByteRange);
      for (let at = 0; at < bytes.length; at += 64 * 1024) {
        if (position + at >= failAt) throw new Error('the client went away');
        yield bytes.subarray(at, at + 64 * 1024);
      }
      position += bytes.length;
    }
  }

  async function stagedBytes(stagingKey: string): Promise<Buffer> {
    const handle = await store.open(stagingKey);
    const pieces: Buffer[] = [];
    for await (const p of await handle.read()) pieces.push(p as Buffer);
    return Buffer.concat(pieces);
  }

  test.each<[string, Segment[], number]>([
    // 12 MiB copied whole; the 100 bytes after it take the first bytes of the next copy up to a part.
    ['a long copy first, then new bytes topped up from the next copy', [{ copy: [0, 12 * MiB] }, { data: randomBytes(100) }, { copy: [13 * MiB, 11 * MiB] }], 12 * MiB + 11 * MiB - (MIN_PART - 100)],
    // A part of new bytes goes out at 16 MiB; the 1 MiB after it takes 4 MiB of the copy.
    ['new bytes over a part, then the whole base', [{ data: randomBytes(17 * MiB) }, { copy: [0, 30 * MiB] }], 26 * MiB],
    ['copies too short to stand as parts, sent as new bytes', [{ copy: [0, 4 * MiB] }, { data: randomBytes(10) }, { copy: [5 * MiB, 3 * MiB] }], 0],
  ])('%s: byte for byte, the long stretches copied in the bucket', async (_name, segments, copied) => {
    const staging = store.stageFromBase(baseKey, { maxBytes: 100 * MiB }) as S3BaseCopyStaging;
    const target = Buffer.concat(segments.map((s) => ('copy' in s ? base.subarray(s.copy[0], s.copy[0] + s.copy[1]) : s.data)));

    const staged = await staging.stage(Readable.from(source(staging, segments)));

    expect(staged).toMatchObject({ size: target.length, sha256: sha256(target) });
    expect(staging.copiedBytes).toBe(copied);
    expect((await stagedBytes(staged.stagingKey)).equals(target)).toBe(true);
    await store.discard(staged);
    expect(await leftovers()).toEqual([]);
  });

  test('a source that fails after copies went out: the upload aborted, nothing left', async () => {
    const staging = store.stageFromBase(baseKey, { maxBytes: 100 * MiB }) as S3BaseCopyStaging;
    const segments: Segment[] = [{ copy: [0, 12 * MiB] }, { data: randomBytes(6 * MiB) }, { copy: [12 * MiB, 10 * MiB] }];

    await expect(staging.stage(Readable.from(source(staging, segments, 20 * MiB)))).rejects.toThrow('the client went away');

    expect(staging.copiedBytes).toBeGreaterThan(0);
    expect(await leftovers()).toEqual([]);
  });

  test('a base removed before its copy: ContentNotFoundError, nothing left', async () => {
    const goneKey = `dev/gone-${newId()}`;
    await store.place(await store.stage(Readable.from([base.subarray(0, 8 * MiB)]), { maxBytes: base.length }), goneKey);
    const staging = store.stageFromBase(goneKey, { maxBytes: 100 * MiB }) as S3BaseCopyStaging;
    await store.remove(goneKey);
    const bytes = base.subarray(0, 8 * MiB);
    async function* announced(): AsyncGenerator<Buffer> {
      staging.copying(0, { start: 0, end: bytes.length - 1 });
      yield bytes;
    }

    await expect(staging.stage(Readable.from(announced()))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await leftovers()).toEqual([]);
  });
});
