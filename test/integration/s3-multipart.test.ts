import { randomBytes } from 'node:crypto';
import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { putStreamed, type StreamedPut } from '../../shared/storage/s3/s3.multipart';
import { createS3Client } from '../../shared/storage/s3/s3.client';
import type { S3ContentStore } from '../../shared/storage/s3/s3.store';
import { onS3Store } from '../support/drivers';

/**
 * Streamed writes of the S3 driver on the suite's RGW: content of any size arrives whole, and a
 * failure leaves neither an object nor stored parts.
 */

const MiB = 1024 * 1024;
/** S3's smallest part (but the last): the tests cross part boundaries without writing much. */
const PART = 5 * MiB;

const s3 = onS3Store();
let store: S3ContentStore;

beforeAll(() => {
  store = s3.store();
});

/** `body` as a socket delivers it: chunks of uneven sizes. */
async function* chunks(body: Buffer, failAfter = Infinity): AsyncGenerator<Buffer> {
  for (let at = 0, i = 0; at < body.length; i++) {
    if (at >= failAfter) throw new Error('the client went away');
    const n = 1 + ((i * 7919) % (256 * 1024));
    yield body.subarray(at, at + n);
    at += n;
  }
}

/** The write of `key` in parts of PART, two in flight. */
const putOf = (key: string): StreamedPut => ({ client: store.client, bucket: store.bucket, key: store.objectKey(key), partSize: PART, partsInFlight: 2 });

async function stored(key: string): Promise<Buffer> {
  const res = await store.client.send(new GetObjectCommand({ Bucket: store.bucket, Key: store.objectKey(key) }));
  return Buffer.from(await res.Body!.transformToByteArray());
}

async function pendingUploads(): Promise<string[]> {
  const out: string[] = [];
  for await (const u of store.multipartUploads('')) out.push(u.key);
  return out;
}

test.each([0, 1, PART - 1, PART, PART + 1, 2 * PART + PART / 2])('%i bytes arrive whole, and no multipart upload is left', async (size) => {
  const body = randomBytes(size);
  const key = `streamed/${size}`;
  await putStreamed(putOf(key), chunks(body));
  expect((await stored(key)).equals(body)).toBe(true);
  expect(await pendingUploads()).toEqual([]);
});

test('the source is read at most the parts in flight and the one being gathered ahead of what the store has stored', async () => {
  const body = randomBytes(6 * PART + 12345);
  // A client on the store's configuration, with a step that counts each part's bytes once the store answered.
  const client = createS3Client(store.config);
  let acknowledged = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      if (context.commandName === 'UploadPartCommand') acknowledged += ((args.input as { Body: Buffer }).Body).length;
      return out;
    },
    { step: 'initialize', name: 'countStoredParts' },
  );
  let read = 0;
  let ahead = 0;
  async function* counted(): AsyncGenerator<Buffer> {
    for await (const chunk of chunks(body)) {
      read += chunk.length;
      ahead = Math.max(ahead, read - acknowledged);
      yield chunk;
    }
  }
  try {
    await putStreamed({ ...putOf('bounded/six-parts'), client }, counted());
  } finally {
    client.destroy();
  }
  expect((await stored('bounded/six-parts')).equals(body)).toBe(true);
  expect(acknowledged).toBe(body.length);
  // Two parts in flight and one being gathered, plus one chunk of the source (at most 256 KiB) and
  // what the stream between them buffers.
  expect(ahead).toBeLessThanOrEqual(3 * PART + 512 * 1024);
});

test('a source that fails after parts were stored leaves no object and no stored parts', async () => {
  const key = 'failed/midway';
  const body = randomBytes(3 * PART);
  await expect(
    putStreamed(putOf(key), chunks(body, 2 * PART + 10)),
  ).rejects.toThrow('the client went away');
  expect(await pendingUploads()).toEqual([]);
  await expect(store.client.send(new HeadObjectCommand({ Bucket: store.bucket, Key: store.objectKey(key) }))).rejects.toMatchObject({ name: 'NotFound' });
});

test('a part the object store refuses fails the write, which stores nothing', async () => {
  const key = 'refused/midway';
  const body = randomBytes(4 * PART);
  // Once the first parts are out, the multipart upload is aborted behind the writer's back (as a
  // lifecycle rule would): the parts after it are refused (NoSuchUpload).
  async function* abortedMidway(): AsyncGenerator<Buffer> {
    let aborted = false;
    for await (const chunk of chunks(body)) {
      yield chunk;
      const uploads = aborted ? [] : await pendingUploadsOf(key);
      for (const u of uploads) {
        await store.abortMultipart(u.key, u.uploadId);
        aborted = true;
      }
    }
  }
  await expect(
    putStreamed(putOf(key), abortedMidway()),
  ).rejects.toMatchObject({ name: 'NoSuchUpload' });
  expect(await pendingUploads()).toEqual([]);
  await expect(store.client.send(new HeadObjectCommand({ Bucket: store.bucket, Key: store.objectKey(key) }))).rejects.toMatchObject({ name: 'NotFound' });
});

async function pendingUploadsOf(key: string) {
  const out = [];
  for await (const u of store.multipartUploads(key)) out.push(u);
  return out;
}
