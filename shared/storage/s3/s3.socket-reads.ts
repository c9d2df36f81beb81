import type { Writable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { S3Config } from '../../config';
import type { ByteRange } from '../content.store';
import { GetSigner } from './s3.get-signer';
import { SocketSplice, type Relay } from './s3.socket-splice';
import { HeadReader, Slabs, SocketPool, type PooledSocket } from './s3.sockets';

/** A status line and headers longer than this are not an object store's answer to a GET. */
const MAX_HEAD_BYTES = 64 * 1024;
/** Lanes, and the bytes copied out of the shared receive buffer, are carved from slabs of this size; this many are kept for reuse. */
const SLAB_BYTES = 4 * 1024 * 1024;
const SPARE_SLABS = 8;
/** A body's reads land in a lane of at most this much; a lane with less room than the minimum is replaced. */
const LANE_BYTES = 512 * 1024;
const MIN_LANE_READ = 64 * 1024;
/** A started read neither written nor cancelled within this long closes its connection. */
const START_TTL_MS = 10_000;
/** A read that receives nothing for this long fails (unless the caller sets another limit). */
const READ_TIMEOUT_MS = 30_000;

/** The outcome of one GET on a connection: the bytes went to `dest`, or the answer was not one to stream. */
export type Exchange = { sent: true } | { sent: false; reason: string };

/** A GET sent before its bytes are wanted: the answer waits, unread, for `writeTo` or `cancel`. */
export interface StartedRead {
  /** As S3SocketReads.writeTo, for what the read was started on; a second call is declined. */
  writeTo(dest: Writable): Promise<Exchange>;
  /** Closes the request's connection unless writeTo was called; a later writeTo is declined. */
  cancel(): void;
}

/** A request written on a connection, its answer not read yet. */
interface Sending {
  conn: PooledSocket;
  /** The connection ended or failed before the answer was wanted. */
  closed: boolean;
}

/**
 * GETs of objects written straight into a response over plain HTTP, for an endpoint on `http:` (an
 * object store on the same network). Once an answer's head is read, its body is read into lanes of
 * reused slabs and written to the client from there, where Node's HTTP client would allocate a
 * buffer per 64 KiB read: what lets a download through the gateway keep pace with reading the
 * bucket directly (docs/BENCHMARKS.md, "What limits each figure"). A large body bound for a plain
 * TCP response skips the process altogether: the kernel relays it (s3.socket-splice.ts).
 *
 * Only the answer this path expects is streamed: the status asked for, a Content-Length of the size
 * asked for, no transfer coding. Anything else (a precondition failure, a missing object, a slow
 * down, a connection that fails before answering) is `declined` before a byte reaches `dest`, and
 * the caller reads through the SDK, which retries and names the error.
 */
export class S3SocketReads {
  private readonly pool: SocketPool;
  private readonly signer: GetSigner;
  private readonly slabs = new Slabs(SLAB_BYTES, SPARE_SLABS);
  private readonly splice = new SocketSplice();
  /** Reads streamed over the socket, reads declined to the SDK, and streamed reads whose body was relayed in the kernel. */
  readonly counts = { streamed: 0, declined: 0, relayed: 0 };

  /** A reader for the store's endpoint, or undefined when it is not plain HTTP (AWS itself, TLS). */
  static for(client: S3Client, config: S3Config, readTimeoutMs = READ_TIMEOUT_MS): S3SocketReads | undefined {
    if (!config.endpoint) return undefined;
    const endpoint = new URL(config.endpoint);
    if (endpoint.protocol !== 'http:' || endpoint.search) return undefined;
    return new S3SocketReads(client, config, endpoint, readTimeoutMs);
  }

  private constructor(
    client: S3Client,
    config: S3Config,
    endpoint: URL,
    /** How long a read may receive nothing before it fails. */
    private readonly readTimeoutMs: number,
  ) {
    this.pool = new SocketPool(endpoint.hostname.replace(/^\[|\]$/g, ''), Number(endpoint.port || 80));
    this.signer = new GetSigner(client, config, endpoint);
  }

  /**
   * Writes the object's bytes in `range` (all of its `size` when absent) into `dest`, the object
   * pinned to `etag`. Resolves `{ sent: true }` once every byte was written, or when `dest` closed
   * first; `{ sent: false }` when nothing was written and the SDK should read instead; rejects when
   * the connection fails after bytes were written (the caller cuts the response).
   */
  writeTo(objectKey: string, etag: string | undefined, size: number, range: ByteRange | undefined, dest: Writable): Promise<Exchange> {
    return this.start(objectKey, etag, size, range).writeTo(dest);
  }

  /**
   * Sends the GET of `writeTo` now and reads its answer only when `writeTo` is called on the result:
   * the object store's round trip runs while the caller does something else (a download looks its
   * file up). A start neither written nor cancelled within START_TTL_MS closes its connection.
   */
  start(objectKey: string, etag: string | undefined, size: number, range: ByteRange | undefined): StartedRead {
    const expected = { status: range ? 206 : 200, length: range ? range.end - range.start + 1 : size };
    const request = etag !== undefined && /[\r\n]/.test(etag) ? undefined : this.signedRequest(objectKey, etag, range);
    const first = request?.then((text) => this.send(text, false)).catch(() => undefined);
    let state: 'started' | 'used' | 'cancelled' = 'started';
    const cancel = () => {
      clearTimeout(expiry);
      if (state !== 'started') return;
      state = 'cancelled';
      void first?.then((sending) => sending?.conn.socket.destroy());
    };
    const expiry = setTimeout(cancel, START_TTL_MS).unref();
    return {
      cancel,
      writeTo: async (dest) => {
        clearTimeout(expiry);
        if (state !== 'started' || !request) return this.counted({ sent: false, reason: request ? `read ${state}` : 'unusable ETag' });
        state = 'used';
        let sending = await first;
        for (let attempt = 0; ; attempt++) {
          if (!sending) return this.counted({ sent: false, reason: 'no connection to the object store' });
          const outcome = await this.receive(sending, expected, dest);
          // A kept connection the server closed meanwhile fails before answering: once more on a new one.
          if (outcome !== 'stale') return this.counted(outcome);
          if (attempt > 0) return this.counted({ sent: false, reason: 'the connection closed before an answer' });
          sending = await this.send(await request, true).catch(() => undefined);
        }
      },
    };
  }

  private counted(outcome: Exchange): Exchange {
    if (outcome.sent) this.counts.streamed++;
    else this.counts.declined++;
    return outcome;
  }

  /** Closes the idle connections. */
  close(): void {
    this.pool.close();
  }

  private async signedRequest(objectKey: string, etag: string | undefined, range: ByteRange | undefined): Promise<string> {
    let text = await this.signer.head(objectKey);
    // Neither is signed: SigV4 covers the headers a request names, and these change from read to read.
    if (etag !== undefined) text += `if-match: ${etag}\r\n`;
    if (range) text += `range: bytes=${range.start}-${range.end}\r\n`;
    return `${text}\r\n`;
  }


  /** Sends `request` on a connection whose answer is left unread until `receive`. */
  private async send(request: string, fresh: boolean): Promise<Sending> {
    const conn = await this.pool.acquire(fresh);
    const sending: Sending = { conn, closed: false };
    conn.socket.pause();
    conn.sink = { data: () => undefined, closed: () => void (sending.closed = true) };
    conn.socket.write(request);
    return sending;
  }

  /** Reads the answer of a sent GET into `dest`; 'stale' when a reused connection failed before any byte of it. */
  private receive(sending: Sending, expected: { status: number; length: number }, dest: Writable): Promise<Exchange | 'stale'> {
    const { conn } = sending;
    const { socket } = conn;
    if (sending.closed || socket.destroyed) {
      socket.destroy();
      return Promise.resolve(conn.reused ? 'stale' : { sent: false, reason: 'the connection closed before an answer' });
    }
    return new Promise((resolve, reject) => {
      const heads = new HeadReader(MAX_HEAD_BYTES);
      let remaining = -1;
      let keep = false;
      let received = false;
      let written = false;
      let settled = false;
      let relay: Relay | undefined;
      const settle = (outcome: Exchange | 'stale' | Error, reuse = false) => {
        if (settled) return;
        settled = true;
        // Kept, the connection reads into the shared buffer again; closed, it reads no more.
        conn.lane?.release();
        conn.lane = undefined;
        dest.off('close', destClosed);
        dest.off('drain', drained);
        socket.setTimeout(0);
        if (reuse) this.pool.release(conn);
        else socket.destroy();
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      // The client went away: the rest of the object is not read (the connection cannot be kept).
      const destClosed = () => {
        relay?.cancel();
        settle({ sent: true });
      };
      // Waiting on a slow client is not the object store's silence: no read timeout while paused.
      const drained = () => {
        socket.setTimeout(this.readTimeoutMs);
        socket.resume();
      };
      const body = (buf: Buffer, from: number, n: number) => {
        const take = Math.min(n, remaining);
        remaining -= take;
        written = true;
        const lane = conn.lane;
        const { chunk, written: done } = lane && buf === lane.space ? lane.take(from, take) : this.slabs.copy(buf, from, take);
        if (!dest.write(chunk, done) && remaining > 0) {
          socket.setTimeout(0);
          socket.pause();
          dest.once('drain', drained);
        }
        // Bytes past the announced length: the answer is complete, the connection is not reused.
        if (remaining === 0) settle({ sent: true }, keep && take === n);
      };
      // After each read: the next lands past it, and while body bytes remain, in a lane with room.
      const steer = (n: number, buf: Buffer) => {
        const lane = conn.lane;
        if (lane && buf === lane.space) lane.advance(n);
        if (settled || remaining <= 0 || relay) return;
        if (!conn.lane || conn.lane.space.length < MIN_LANE_READ) {
          conn.lane?.release();
          conn.lane = this.slabs.lane(Math.min(remaining, LANE_BYTES));
        }
      };
      const read = (n: number, buf: Buffer) => {
        if (settled) return;
        received = true;
        if (remaining >= 0) return body(buf, 0, n);
        const got = heads.feed(buf, n);
        if (got === 'more') return;
        if (got === 'too long') return settle({ sent: false, reason: `an answer head over ${MAX_HEAD_BYTES / 1024} KiB` });
        const { head, bodyAt } = got;
        const length = Number(head?.headers.get('content-length') ?? NaN);
        if (!head || head.status !== expected.status || length !== expected.length || head.headers.has('transfer-encoding')) {
          return settle({ sent: false, reason: `answered ${head?.status ?? 'unreadably'}` });
        }
        remaining = length;
        keep = head.headers.get('connection')?.toLowerCase() !== 'close';
        if (remaining === 0) return settle({ sent: true }, keep && bodyAt === n);
        if (bodyAt < n) body(buf, bodyAt, n - bodyAt);
        if (remaining > 0) relayRest();
      };
      // The rest of a large body goes from socket to socket inside the kernel, where it can.
      const relayRest = () => {
        relay = this.splice.relay(socket, dest, remaining, this.readTimeoutMs);
        if (!relay) return;
        socket.pause();
        socket.setTimeout(0);
        dest.off('drain', drained);
        relay.done.then(
          (how) => {
            relay = undefined;
            if (settled) return;
            if (how === 'declined') return drained();
            // As when the response closes first: sent, and the rest of the object left unread.
            if (how === 'client gone') return settle({ sent: true });
            remaining = 0;
            this.counts.relayed++;
            settle({ sent: true }, keep);
            socket.resume();
          },
          (err: Error) => settle(err),
        );
      };
      conn.sink = {
        data: (n, buf) => {
          read(n, buf);
          steer(n, buf);
        },
        closed: (err) => {
          if (settled) return;
          if (written) settle(err ?? new Error('the object store closed the connection mid-object'));
          else settle(!received && conn.reused ? 'stale' : { sent: false, reason: err?.message ?? 'the connection closed' });
        },
      };
      if (dest.destroyed) return settle({ sent: true });
      dest.once('close', destClosed);
      socket.setTimeout(this.readTimeoutMs);
      socket.resume();
    });
  }
}
