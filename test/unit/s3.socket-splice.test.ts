import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import type { ByteRange } from '../../shared/storage/content.store';
import type { Exchange } from '../../shared/storage/s3/s3.socket-reads';
import { SocketSplice } from '../../shared/storage/s3/s3.socket-splice';
import { ok, scriptedServer, type Exchange as StoreExchange } from '../support/s3.scripted';

/**
 * Bodies relayed from the object store's socket to the client's inside the kernel
 * (s3.socket-splice.ts, shared/native/socket_splice.c): a scripted object store on one side, a real
 * HTTP server answering with S3SocketReads.writeTo on the other, as content.download.ts does.
 */

const KiB = 1024;
const MiB = 1024 * KiB;

/** The object store, and a gateway-like HTTP server that sends `size` bytes of key 'k' per request. */
async function relayPair(size: number, answer: (ex: StoreExchange) => void, readTimeoutMs?: number) {
  const store = await scriptedServer(answer, readTimeoutMs);
  const outcomes: (Exchange | Error)[] = [];
  const server = http.createServer(async (req, res) => {
    const [start, end] = String(req.headers['x-range'] ?? '').split('-').map(Number);
    const range: ByteRange | undefined = req.headers['x-range'] ? { start: start!, end: end! } : undefined;
    res.setHeader('Content-Length', range ? range.end - range.start + 1 : size);
    try {
      outcomes.push(await store.reads.writeTo('k', undefined, size, range, res));
      if (!res.destroyed) res.end();
    } catch (err) {
      outcomes.push(err as Error);
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const agent = new http.Agent({ keepAlive: true });
  /** The body as received, and whether it ended whole; `leaveAfter` bytes, the client goes away. */
  const get = (range?: ByteRange, opts: { leaveAfter?: number; pauseMs?: number } = {}) =>
    new Promise<{ body: Buffer; complete: boolean }>((resolve) => {
      const got: Buffer[] = [];
      let n = 0;
      const headers = range ? { 'x-range': `${range.start}-${range.end}` } : {};
      const req = http.get({ host: '127.0.0.1', port, path: '/', headers, agent }, (res) => {
        res.on('data', (chunk: Buffer) => {
          got.push(chunk);
          n += chunk.length;
          if (opts.leaveAfter !== undefined && n >= opts.leaveAfter) {
            req.destroy();
            resolve({ body: Buffer.concat(got), complete: false });
          } else if (opts.pauseMs && got.length % 16 === 0) {
            res.pause();
            setTimeout(() => res.resume(), opts.pauseMs);
          }
        });
        res.on('end', () => resolve({ body: Buffer.concat(got), complete: res.complete }));
        res.on('error', () => resolve({ body: Buffer.concat(got), complete: false }));
      });
      req.on('error', () => resolve({ body: Buffer.concat(got), complete: false }));
    });
  /** Resolves once the server has settled `count` reads. */
  const settled = async (count: number) => {
    while (outcomes.length < count) await new Promise((resolve) => setTimeout(resolve, 10));
    return outcomes;
  };
  return {
    store,
    get,
    settled,
    close: async () => {
      agent.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await store.close();
    },
  };
}

/** The store's answer to a request head: the object, or the range the head asks for. */
function answerOf(object: Buffer, head: string): Buffer {
  const range = /range: bytes=(\d+)-(\d+)/.exec(head);
  return range ? ok(object.subarray(Number(range[1]), Number(range[2]) + 1), 206) : ok(object);
}

/** Writes `bytes` in pieces of `piece` every `everyMs`, stopping when the socket is gone. */
function trickle(socket: net.Socket, bytes: Buffer, piece: number, everyMs: number, stopAt = bytes.length): void {
  let at = 0;
  const next = () => {
    if (socket.destroyed || at >= stopAt) return;
    socket.write(bytes.subarray(at, Math.min(at + piece, stopAt)));
    at += piece;
    setTimeout(next, everyMs);
  };
  next();
}

test('the addon is built where the gateway runs (Linux)', () => {
  expect(SocketSplice.available).toBe(process.platform === 'linux');
});

const onLinux = process.platform === 'linux' ? test : test.skip;

onLinux('a large body is relayed whole and by range, on kept connections both sides; a small one is copied', async () => {
  const object = randomBytes(3 * MiB + 77);
  const pair = await relayPair(object.length, ({ head, socket }) => {
    const answer = answerOf(object, head);
    // Some of the body arrives with the head, the rest later: both halves of the relay are used.
    socket.write(answer.subarray(0, 300));
    setTimeout(() => socket.write(answer.subarray(300)), 20);
  });
  const openFds = () => readdirSync('/proc/self/fd').length;
  const fdsAfter: number[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const whole = await pair.get();
      expect(whole.complete).toBe(true);
      expect(whole.body.equals(object)).toBe(true);
      const range = { start: 1000 + i, end: 1000 + i + MiB };
      const part = await pair.get(range);
      expect(part.body.equals(object.subarray(range.start, range.end + 1))).toBe(true);
      const small = { start: 5, end: 5 + 100 * KiB };
      expect((await pair.get(small)).body.equals(object.subarray(small.start, small.end + 1))).toBe(true);
      await pair.settled(3 * (i + 1));
      fdsAfter.push(openFds());
    }
    // A relay keeps no descriptor once it has ended (not even until its handle is collected).
    expect(fdsAfter[2]).toBe(fdsAfter[0]);
    expect(await pair.settled(9)).toEqual(Array(9).fill({ sent: true }));
    expect(pair.store.reads.counts).toEqual({ streamed: 9, declined: 0, relayed: 6 });
    // Read to its end, each answer left the object store's connection ready for the next request.
    expect(pair.store.connections()).toBe(1);
  } finally {
    await pair.close();
  }
});

onLinux('a client that goes away mid-body ends the relay: the read settles, and its connection to the store is not kept', async () => {
  const object = randomBytes(16 * MiB);
  const pair = await relayPair(object.length, ({ head, socket }) => trickle(socket, answerOf(object, head), 64 * KiB, 2));
  try {
    const left = await pair.get(undefined, { leaveAfter: MiB });
    expect(left.complete).toBe(false);
    expect(await pair.settled(1)).toEqual([{ sent: true }]);
    // The next read works, on a new connection.
    const small = await pair.get({ start: 0, end: 1000 });
    expect(small.body.equals(object.subarray(0, 1001))).toBe(true);
    expect(pair.store.connections()).toBe(2);
  } finally {
    await pair.close();
  }
});

onLinux('the store closing mid-body fails the read, and the client sees the body cut short', async () => {
  const object = randomBytes(4 * MiB);
  const answer = ok(object);
  const pair = await relayPair(object.length, ({ socket }) => {
    socket.write(answer.subarray(0, 2 * MiB));
    setTimeout(() => socket.destroy(), 50);
  });
  try {
    const got = await pair.get();
    expect(got.complete).toBe(false);
    expect(got.body.length).toBeLessThan(object.length);
    expect(got.body.equals(object.subarray(0, got.body.length))).toBe(true);
    const [outcome] = await pair.settled(1);
    expect(String(outcome)).toMatch(/closed the connection mid-object|ECONNRESET/);
  } finally {
    await pair.close();
  }
});

onLinux('a store that stops sending mid-body fails the read after the read timeout', async () => {
  const object = randomBytes(4 * MiB);
  const pair = await relayPair(object.length, ({ socket }) => socket.write(ok(object).subarray(0, MiB)), 300);
  try {
    const got = await pair.get();
    expect(got.complete).toBe(false);
    const [outcome] = await pair.settled(1);
    expect(String(outcome)).toMatch(/ETIMEDOUT/);
  } finally {
    await pair.close();
  }
});

onLinux('a slow client is waited for past the read timeout: every byte arrives, in order', async () => {
  const object = randomBytes(8 * MiB);
  const pair = await relayPair(object.length, ({ socket }) => socket.write(ok(object)), 200);
  try {
    const got = await pair.get(undefined, { pauseMs: 250 });
    expect(got.complete).toBe(true);
    expect(got.body.equals(object)).toBe(true);
    expect(await pair.settled(1)).toEqual([{ sent: true }]);
    expect(pair.store.reads.counts.relayed).toBe(1);
  } finally {
    await pair.close();
  }
});

onLinux('bytes still queued for a slow client go out first, and the relayed body follows them', async () => {
  const queued = randomBytes(32 * MiB);
  const relayed = randomBytes(2 * MiB);
  // The "store": a plain socket whose peer sends the relayed bytes.
  const source = net.createServer((socket) => socket.end(relayed));
  await new Promise<void>((resolve) => source.listen(0, '127.0.0.1', resolve));
  const from = net.connect((source.address() as net.AddressInfo).port, '127.0.0.1');
  // Paused before it connects: no byte is read into the process, as with the store's connections.
  from.pause();
  await once(from, 'connect');
  const splice = new SocketSplice();
  let wasQueued = -1;
  let settle: (how: string) => void = () => undefined;
  // The client may have every byte before the handler hears how the relay ended.
  const how = new Promise<string>((resolve) => (settle = resolve));
  const server = http.createServer(async (_req, res) => {
    res.setHeader('Content-Length', queued.length + relayed.length);
    res.write(queued);
    wasQueued = res.writableLength;
    const relay = splice.relay(from, res, relayed.length, 5000)!;
    settle(await relay.done.catch((err: Error) => err.message));
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const body = await new Promise<Buffer>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port }, (res) => {
        const got: Buffer[] = [];
        // A client that takes nothing for a while: the queued bytes wait in the gateway.
        res.pause();
        setTimeout(() => res.resume(), 300);
        res.on('data', (c: Buffer) => got.push(c));
        res.on('end', () => resolve(Buffer.concat(got)));
        res.on('error', reject);
      });
    });
    expect(wasQueued).toBeGreaterThan(0);
    expect(await how).toBe('moved');
    expect(body.equals(Buffer.concat([queued, relayed]))).toBe(true);
  } finally {
    from.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await new Promise((resolve) => source.close(resolve));
  }
});
