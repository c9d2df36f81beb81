import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { ContentNotFoundError } from '../../shared/storage/content.store';
import type { S3ContentStore } from '../../shared/storage/s3/s3.store';
import { onS3Store } from '../support/drivers';

/**
 * Reads of the S3 driver on the suite's RGW, straight into a destination (what a download does):
 * signed as RGW requires, whole and by range, pinned to the object the handle was opened on.
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

test('content is written into the destination whole and by range, read after read on kept connections', async () => {
  const body = randomBytes(5 * 1024 * 1024 + 3);
  // A key with characters a path must escape: the signature covers the escaped path.
  const key = "dev1/ab/file name+(1)!'*~.bin";
  await put(key, body);
  const handle = await store.open(key);
  expect(handle.writeTo).toBeDefined();
  for (let i = 0; i < 5; i++) {
    const whole = collector();
    await handle.writeTo!(whole.dest);
    expect(whole.bytes().equals(body)).toBe(true);
    const start = 4096 * i + i;
    const part = collector();
    await handle.writeTo!(part.dest, { start, end: start + 1024 * 1024 });
    expect(part.bytes().equals(body.subarray(start, start + 1024 * 1024 + 1))).toBe(true);
  }
  const empty = 'dev1/ab/empty';
  await put(empty, Buffer.alloc(0));
  const nothing = collector();
  await (await store.open(empty)).writeTo!(nothing.dest);
  expect(nothing.bytes().length).toBe(0);
  // Every read went over the socket: RGW accepted the signatures and answered as asked.
  expect(store.socketReads!.counts).toEqual({ streamed: 11, declined: 0, relayed: 0 });
});

test('a handle reads only the object it was opened on: replaced under its key, the read fails as not found and sends nothing', async () => {
  const key = 'dev1/cd/replaced';
  await put(key, Buffer.from('the first bytes'));
  const handle = await store.open(key);
  await put(key, Buffer.from('other bytes, another ETag'));
  const got = collector();
  const declined = store.socketReads!.counts.declined;
  await expect(handle.writeTo!(got.dest)).rejects.toBeInstanceOf(ContentNotFoundError);
  expect(got.bytes().length).toBe(0);
  // RGW's 412 was declined to the SDK, which named it.
  expect(store.socketReads!.counts.declined).toBe(declined + 1);
});

test('a removed object fails as not found', async () => {
  const key = 'dev1/ef/removed';
  await put(key, Buffer.from('short-lived'));
  const handle = await store.open(key);
  await store.remove(key);
  await expect(handle.writeTo!(collector().dest)).rejects.toBeInstanceOf(ContentNotFoundError);
});

test('into an HTTP response, a large body goes from RGW\'s socket to the client\'s in the kernel, whole and by range', async () => {
  const body = randomBytes(6 * 1024 * 1024 + 11);
  const key = 'dev1/gh/relayed';
  await put(key, body);
  const handle = await store.open(key);
  // The client may have every byte before the handler hears that the relay ended: each answer is awaited.
  const served: Promise<void>[] = [];
  const server = http.createServer((req, res) => {
    const range = req.headers['x-range'] ? { start: 1000, end: 1000 + 2 * 1024 * 1024 } : undefined;
    res.setHeader('Content-Length', range ? range.end - range.start + 1 : body.length);
    served.push(handle.writeTo!(res, range).then(() => void res.end()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  try {
    const relayed = store.socketReads!.counts.relayed;
    const whole = Buffer.from(await (await fetch(url)).arrayBuffer());
    expect(whole.equals(body)).toBe(true);
    const part = Buffer.from(await (await fetch(url, { headers: { 'x-range': 'yes' } })).arrayBuffer());
    expect(part.equals(body.subarray(1000, 1000 + 2 * 1024 * 1024 + 1))).toBe(true);
    await Promise.all(served);
    // Linux only: elsewhere the addon is not built and the body is copied.
    expect(store.socketReads!.counts.relayed - relayed).toBe(process.platform === 'linux' ? 2 : 0);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
