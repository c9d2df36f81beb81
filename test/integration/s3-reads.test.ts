import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { ContentNotFoundError } from '../../shared/storage/content.store';
import type { S3ContentStore } from '../../shared/storage/s3/s3.store';
import { onS3Store } from '../support/drivers';

/**
 * Reads of the S3 driver on the suite's RGW into a destination (what a download does): the SDK's
 * body, whole and by range, pinned to the object the handle was opened on.
 */

const s3 = onS3Store();
let store: S3ContentStore;

beforeAll(() => {
  store = s3.store();
});

function collector() {
  const got: Buffer[] = [];
  const dest = new Writable({
    write(chunk, _enc, done) {
      got.push(Buffer.from(chunk as Buffer));
      done();
    },
  });
  return { dest, bytes: () => Buffer.concat(got) };
}

async function put(key: string, body: Buffer): Promise<void> {
  await store.client.send(new PutObjectCommand({ Bucket: store.bucket, Key: store.objectKey(key), Body: body }));
}

/** Reads `range` of `handle` (all when absent) into `dest`, as a download does. */
async function readInto(handle: Awaited<ReturnType<S3ContentStore['open']>>, dest: Writable, range?: { start: number; end: number }) {
  await pipeline(await handle.read(range), dest);
}

test('content is read into the destination whole and by range, read after read on kept connections', async () => {
  const body = randomBytes(5 * 1024 * 1024 + 3);
  // A key with characters a path must escape: the signature covers the escaped path.
  const key = "dev1/ab/file name+(1)!'*~.bin";
  await put(key, body);
  const handle = await store.open(key);
  for (let i = 0; i < 5; i++) {
    const whole = collector();
    await readInto(handle, whole.dest);
    expect(whole.bytes().equals(body)).toBe(true);
    const start = 4096 * i + i;
    const part = collector();
    await readInto(handle, part.dest, { start, end: start + 1024 * 1024 });
    expect(part.bytes().equals(body.subarray(start, start + 1024 * 1024 + 1))).toBe(true);
  }
  const empty = 'dev1/ab/empty';
  await put(empty, Buffer.alloc(0));
  const nothing = collector();
  await readInto(await store.open(empty), nothing.dest);
  expect(nothing.bytes().length).toBe(0);
});

test('a handle reads only the object it was opened on: replaced under its key, the read fails as not found and sends nothing', async () => {
  const key = 'dev1/cd/replaced';
  await put(key, Buffer.from('the first bytes'));
  const handle = await store.open(key);
  await put(key, Buffer.from('other bytes, another ETag'));
  const got = collector();
  await expect(readInto(handle, got.dest)).rejects.toBeInstanceOf(ContentNotFoundError);
  expect(got.bytes().length).toBe(0);
});

test('a removed object fails as not found', async () => {
  const key = 'dev1/ef/removed';
  await put(key, Buffer.from('short-lived'));
  const handle = await store.open(key);
  await store.remove(key);
  await expect(readInto(handle, collector().dest)).rejects.toBeInstanceOf(ContentNotFoundError);
});
