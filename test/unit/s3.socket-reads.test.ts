import { randomBytes } from 'node:crypto';
import type net from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import type { S3Config } from '../../shared/config';
import { S3SocketReads } from '../../shared/storage/s3/s3.socket-reads';
import { client, ok, scriptedServer } from '../support/s3.scripted';

/**
 * S3SocketReads against a scripted HTTP/1.1 server: the connection handling an object store's
 * answers can provoke (kept connections closed under a request, a cut body, an answer that is not the
 * bytes asked for, a slow client). Its signing and streaming against a real object store are in
 * test/integration/s3-reads.test.ts.
 */

const KiB = 1024;

/** A destination that keeps what it is given; `delay` makes each write complete later (a slow client). */
function sink(delay = 0, highWaterMark = 16 * KiB) {
  const got: Buffer[] = [];
  const dest = new Writable({
    highWaterMark,
    write(chunk, _enc, done) {
      got.push(Buffer.from(chunk as Buffer));
      if (delay) setTimeout(done, delay);
      else done();
    },
  });
  return { dest, bytes: () => Buffer.concat(got) };
}

test('only a plain-HTTP endpoint is read over a socket: AWS itself and TLS endpoints go through the SDK', () => {
  const base: S3Config = { bucket: 'b', prefix: '', endpoint: undefined, region: 'us-east-1', forcePathStyle: false, credentials: undefined };
  expect(S3SocketReads.for(client, base)).toBeUndefined();
  expect(S3SocketReads.for(client, { ...base, endpoint: 'https://s3.example.com' })).toBeUndefined();
  expect(S3SocketReads.for(client, { ...base, endpoint: 'http://minio.internal:9000' })).toBeInstanceOf(S3SocketReads);
});

test('the bytes of the object reach the destination, the request is signed, and the connection is kept for the next', async () => {
  const object = randomBytes(3 * 1024 * KiB + 17);
  const server = await scriptedServer(({ head, socket }) => {
    const range = /\r\nrange: bytes=(\d+)-(\d+)/i.exec(head);
    socket.write(range ? ok(object.subarray(Number(range[1]), Number(range[2]) + 1), 206) : ok(object));
  });
  try {
    const whole = sink();
    expect(await server.reads.writeTo('dev/a b+c', '"etag-1"', object.length, undefined, whole.dest)).toEqual({ sent: true });
    expect(whole.bytes().equals(object)).toBe(true);

    const part = sink();
    expect(await server.reads.writeTo('dev/a b+c', '"etag-1"', object.length, { start: 1000, end: 70_000 }, part.dest)).toEqual({ sent: true });
    expect(part.bytes().equals(object.subarray(1000, 70_001))).toBe(true);

    expect(server.connections()).toBe(1);
    const [first, second] = server.requests;
    expect(first!.head).toMatch(/^GET \/b\/dev\/a%20b%2Bc HTTP\/1\.1\r\n/);
    expect(first!.head).toMatch(/\r\nauthorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}/i);
    expect(first!.head).toMatch(/\r\nif-match: "etag-1"/i);
    expect(second!.head).toMatch(/\r\nrange: bytes=1000-70000/i);
    // The signed part of a GET names the object alone, so the next read of it reuses the signature.
    const authorization = (head: string) => /\r\nauthorization: ([^\r]+)/i.exec(head)![1];
    expect(authorization(second!.head)).toBe(authorization(first!.head));

    await server.reads.writeTo('dev/other', undefined, object.length, undefined, sink().dest);
    expect(authorization(server.requests[2]!.head)).not.toBe(authorization(first!.head));
  } finally {
    await server.close();
  }
});

test.each([
  ['read at once', (reads: S3SocketReads, dest: Writable, size: number) => reads.writeTo('k', undefined, size, undefined, dest)],
  [
    'started before it is wanted',
    async (reads: S3SocketReads, dest: Writable, size: number) => {
      const started = reads.start('k', undefined, size, undefined);
      await new Promise((resolve) => setTimeout(resolve, 50));
      return started.writeTo(dest);
    },
  ],
])('a kept connection the server closed meanwhile is replaced by a new one (%s), and the read succeeds', async (_how, read) => {
  const object = randomBytes(10 * KiB);
  const server = await scriptedServer(({ socket, connection }) => {
    // The first connection answers once, then drops the next request unanswered, as a server whose
    // keep-alive limit passed would.
    if (connection === 1 && server.requests.length > 1) socket.destroy();
    else socket.write(ok(object));
  });
  try {
    expect(await server.reads.writeTo('k', undefined, object.length, undefined, sink().dest)).toEqual({ sent: true });
    const again = sink();
    expect(await read(server.reads, again.dest, object.length)).toEqual({ sent: true });
    expect(again.bytes().equals(object)).toBe(true);
    expect(server.connections()).toBe(2);
  } finally {
    await server.close();
  }
});

test.each([
  ['a missing object', 'HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nnokey'],
  ['a precondition failure', 'HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n'],
  ['a slow down', 'HTTP/1.1 503 Slow Down\r\nContent-Length: 0\r\n\r\n'],
  ['another length than the object', 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc'],
  ['a chunked body', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n4\r\nabcd\r\n0\r\n\r\n'],
  ['an answer that is not HTTP', 'SSH-2.0-OpenSSH\r\n\r\n'],
])('%s is declined before a byte reaches the destination', async (_what, answer) => {
  const server = await scriptedServer(({ socket }) => socket.write(answer));
  try {
    const got = sink();
    const outcome = await server.reads.writeTo('k', '"e"', 4, undefined, got.dest);
    expect(outcome.sent).toBe(false);
    expect(got.bytes().length).toBe(0);
  } finally {
    await server.close();
  }
});

test.each([
  ['inside the status line', 10],
  ['inside the blank line that ends it', -2],
  ['right after it', 0],
])('a head that arrives in two reads, cut %s, is read whole and the body after it is sent exactly', async (_where, cut) => {
  const object = randomBytes(200 * KiB);
  const answer = ok(object);
  const headLength = answer.indexOf('\r\n\r\n') + 4;
  const at = cut > 0 ? cut : headLength + cut;
  const server = await scriptedServer(({ socket }) => {
    socket.write(answer.subarray(0, at));
    setTimeout(() => socket.write(answer.subarray(at)), 30);
  });
  try {
    const got = sink();
    expect(await server.reads.writeTo('k', undefined, object.length, undefined, got.dest)).toEqual({ sent: true });
    expect(got.bytes().equals(object)).toBe(true);
  } finally {
    await server.close();
  }
});

test('a head longer than 64 KiB is declined before a byte reaches the destination', async () => {
  const server = await scriptedServer(({ socket }) => socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-Filler: ${'a'.repeat(70 * KiB)}\r\n\r\nabcd`));
  try {
    const got = sink();
    const outcome = await server.reads.writeTo('k', undefined, 4, undefined, got.dest);
    expect(outcome).toEqual({ sent: false, reason: 'an answer head over 64 KiB' });
    expect(got.bytes().length).toBe(0);
  } finally {
    await server.close();
  }
});

test('a connection that fails before answering is declined, so the SDK can retry', async () => {
  const server = await scriptedServer(({ socket }) => socket.destroy());
  try {
    const got = sink();
    expect((await server.reads.writeTo('k', undefined, 10, undefined, got.dest)).sent).toBe(false);
    expect(got.bytes().length).toBe(0);
  } finally {
    await server.close();
  }
});

test('a body cut after some bytes were sent fails the read, and the connection is not kept', async () => {
  const object = randomBytes(200 * KiB);
  const server = await scriptedServer(({ socket }) => {
    socket.write(ok(object).subarray(0, 100 * KiB));
    setTimeout(() => socket.destroy(), 20);
  });
  try {
    const got = sink();
    await expect(server.reads.writeTo('k', undefined, object.length, undefined, got.dest)).rejects.toThrow(/closed|reset/i);
    expect(got.bytes().length).toBeGreaterThan(0);
    expect(object.subarray(0, got.bytes().length).equals(got.bytes())).toBe(true);
  } finally {
    await server.close();
  }
});

test('an answer that says Connection: close is not kept, and bytes past the announced length are not sent', async () => {
  const object = randomBytes(5 * KiB);
  const server = await scriptedServer(({ socket, connection }) => {
    if (connection === 1) socket.write(ok(object, 200, 'Connection: close\r\n'));
    else socket.write(Buffer.concat([ok(object), Buffer.from('garbage after the body')]));
  });
  try {
    for (let i = 0; i < 3; i++) {
      const got = sink();
      expect(await server.reads.writeTo('k', undefined, object.length, undefined, got.dest)).toEqual({ sent: true });
      expect(got.bytes().equals(object)).toBe(true);
    }
    // The first connection said close, the second sent bytes past its body: neither is reused.
    expect(server.connections()).toBe(3);
  } finally {
    await server.close();
  }
});

test('a slow client is followed at its pace: every byte arrives, in order', async () => {
  const object = randomBytes(8 * 1024 * KiB);
  const server = await scriptedServer(({ socket }) => socket.write(ok(object)));
  try {
    const got = sink(2, 64 * KiB);
    expect(await server.reads.writeTo('k', undefined, object.length, undefined, got.dest)).toEqual({ sent: true });
    await new Promise((resolve) => got.dest.end(resolve));
    expect(got.bytes().equals(object)).toBe(true);
  } finally {
    await server.close();
  }
});

test('many reads at once, over kept connections, with clients of every pace and some leaving: each client gets exactly its bytes', async () => {
  // Objects of sizes around the lanes' (512 KiB) and the slabs' (4 MiB), sent in uneven pieces.
  const objects = [1, 700, 511 * KiB, 512 * KiB + 1, 1500 * KiB, 5 * 1024 * KiB].map((n) => randomBytes(n));
  const server = await scriptedServer(({ head, socket }) => {
    const answer = ok(objects[Number(/^GET \/b\/o(\d+) /.exec(head)![1])]!);
    let at = 0;
    const next = () => {
      if (socket.destroyed || at >= answer.length) return;
      const piece = 1 + Math.floor(Math.random() * 300 * KiB);
      socket.write(answer.subarray(at, at + piece));
      at += piece;
      setImmediate(next);
    };
    next();
  });
  /** Keeps each chunk as given and reads it only when its write completes, as a socket would; `leaves` after its first write. */
  const lateReader = (delay: number, leaves: boolean) => {
    const got: Buffer[] = [];
    const dest = new Writable({
      highWaterMark: 64 * KiB,
      write(chunk: Buffer, _enc, done) {
        setTimeout(() => {
          got.push(Buffer.from(chunk));
          done();
          if (leaves) dest.destroy();
        }, delay);
      },
    });
    return { dest, bytes: () => Buffer.concat(got) };
  };
  try {
    for (let round = 0; round < 6; round++) {
      await Promise.all(
        Array.from({ length: 18 }, async (_, i) => {
          const which = (i + round) % objects.length;
          const object = objects[which]!;
          const leaves = i % 7 === 6 && object.length > 100 * KiB;
          const reader = lateReader([0, 5, 40][i % 3]!, leaves);
          const outcome = await server.reads.writeTo(`o${which}`, undefined, object.length, undefined, reader.dest);
          expect(outcome).toEqual({ sent: true });
          if (leaves) return;
          await new Promise((resolve) => reader.dest.end(resolve));
          expect(reader.bytes().equals(object)).toBe(true);
        }),
      );
    }
    expect(server.reads.counts.declined).toBe(0);
  } finally {
    await server.close();
  }
});

test('a client that goes away stops the read: it settles, and the connection to the store is closed', async () => {
  let storeSide: net.Socket | undefined;
  const server = await scriptedServer(({ socket }) => {
    storeSide = socket;
    socket.write(ok(randomBytes(1024 * KiB)).subarray(0, 300 * KiB));
  });
  try {
    const dest = new PassThrough({ highWaterMark: 1 });
    dest.once('data', () => dest.destroy());
    expect(await server.reads.writeTo('k', undefined, 1024 * KiB, undefined, dest)).toEqual({ sent: true });
    await new Promise((resolve) => (storeSide!.closed ? resolve(undefined) : storeSide!.once('close', resolve)));
    expect(server.connections()).toBe(1);
  } finally {
    await server.close();
  }
});

describe('a read started before it is wanted', () => {
  test('waits unread until written, then sends every byte; a second write is declined', async () => {
    const object = randomBytes(600 * KiB);
    const server = await scriptedServer(({ socket }) => socket.write(ok(object)));
    try {
      const started = server.reads.start('k', '"e"', object.length, undefined);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(server.requests).toHaveLength(1);
      const got = sink();
      expect(await started.writeTo(got.dest)).toEqual({ sent: true });
      expect(got.bytes().equals(object)).toBe(true);
      expect((await started.writeTo(sink().dest)).sent).toBe(false);
    } finally {
      await server.close();
    }
  });

  test('cancelled, it closes its connection and a later write is declined', async () => {
    let storeSide: net.Socket | undefined;
    const server = await scriptedServer(({ socket }) => {
      storeSide = socket;
      socket.write(ok(randomBytes(300 * KiB)));
    });
    try {
      const started = server.reads.start('k', undefined, 300 * KiB, undefined);
      await new Promise((resolve) => setTimeout(resolve, 50));
      started.cancel();
      await new Promise((resolve) => (storeSide!.closed ? resolve(undefined) : storeSide!.once('close', resolve)));
      const got = sink();
      expect((await started.writeTo(got.dest)).sent).toBe(false);
      expect(got.bytes().length).toBe(0);
    } finally {
      await server.close();
    }
  });
});
