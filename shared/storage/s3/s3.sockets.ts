import net from 'node:net';

/** Bytes one read of a socket may take: larger than the 64 KiB Node's own reads are given. */
const RECEIVE_BUFFER_BYTES = 1024 * 1024;
/** Idle keep-alive connections kept per endpoint. */
const MAX_IDLE = 16;
/** An idle connection is closed after this long, before a server's own keep-alive limit closes it under a request. */
const IDLE_MS = 4000;
const CONNECT_TIMEOUT_MS = 5000;

/** What a connection's reads are handed to while a request runs on it. */
export interface ReadSink {
  /** `n` new bytes at the start of `buf`, valid only during the call. */
  data(n: number, buf: Buffer): void;
  /** The connection ended or failed. */
  closed(err: Error | undefined): void;
}

/**
 * A keep-alive connection whose reads land in reused memory (its lane, or the pool's shared buffer):
 * reading a socket into a fresh 64 KiB buffer each time, as Node's HTTP clients do, costs more CPU
 * per byte (docs/BENCHMARKS.md, "What limits each figure").
 */
export class PooledSocket {
  sink: ReadSink | undefined;
  /**
   * Where the connection's next read lands when set, instead of the shared buffer: a region of a
   * slab that a body streams into and is written out from without a copy. Only the request running
   * on the connection sets it, and clears it before the connection is kept or closed.
   */
  lane: Lane | undefined;
  /** Whether a request already ran on it: a failure before any answer may be the server closing it meanwhile. */
  reused = false;

  constructor(readonly socket: net.Socket) {}
}

/**
 * Plain-TCP connections to one endpoint, kept alive between requests. A connection reads into its
 * lane while it has one (a body streaming), else into one receive buffer shared by every connection:
 * JavaScript runs one read callback at a time and each sink copies what it keeps before returning.
 */
export class SocketPool {
  private readonly idle: PooledSocket[] = [];
  private readonly receive = Buffer.allocUnsafe(RECEIVE_BUFFER_BYTES);

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** An idle connection, or a new one once it is connected (always a new one when `fresh`). */
  async acquire(fresh = false): Promise<PooledSocket> {
    const kept = fresh ? undefined : this.idle.pop();
    if (kept) {
      kept.socket.setTimeout(0);
      kept.socket.ref();
      kept.reused = true;
      return kept;
    }
    return this.connect();
  }

  /** Keeps a connection whose last answer was read to its end for the next request, or closes it. */
  release(conn: PooledSocket): void {
    const { socket } = conn;
    if (socket.destroyed || this.idle.length >= MAX_IDLE) {
      socket.destroy();
      return;
    }
    // Anything arriving on an idle connection (bytes, an end) makes it unusable.
    conn.sink = {
      data: () => this.drop(conn),
      closed: () => this.drop(conn),
    };
    socket.setTimeout(IDLE_MS);
    socket.unref();
    this.idle.push(conn);
  }

  /** Closes every idle connection. */
  close(): void {
    for (const conn of this.idle.splice(0)) conn.socket.destroy();
  }

  private drop(conn: PooledSocket): void {
    const at = this.idle.indexOf(conn);
    if (at >= 0) this.idle.splice(at, 1);
    conn.socket.destroy();
  }

  private connect(): Promise<PooledSocket> {
    return new Promise((resolve, reject) => {
      let conn: PooledSocket | undefined;
      const socket = net.connect({
        host: this.host,
        port: this.port,
        noDelay: true,
        onread: {
          // Asked again after every read, for the buffer the next one lands in.
          buffer: () => conn?.lane?.space ?? this.receive,
          callback: (n: number, buf: Uint8Array) => {
            conn?.sink?.data(n, buf as Buffer);
            // Not false: pausing is the sink's to decide, with socket.pause().
            return true;
          },
        },
      });
      conn = new PooledSocket(socket);
      const connected = conn;
      const failed = (err: Error) => reject(err);
      const slow = () => socket.destroy(new Error(`S3 endpoint ${this.host}:${this.port} did not accept a connection in ${CONNECT_TIMEOUT_MS} ms`));
      socket.setTimeout(CONNECT_TIMEOUT_MS, slow);
      socket.once('error', failed);
      socket.once('connect', () => {
        socket.off('error', failed);
        socket.off('timeout', slow);
        socket.setTimeout(0);
        socket.on('timeout', () => socket.destroy(new Error('S3 connection timed out')));
        socket.on('error', (err) => connected.sink?.closed(err));
        socket.on('end', () => connected.sink?.closed(undefined));
        socket.on('close', () => connected.sink?.closed(undefined));
        resolve(connected);
      });
    });
  }
}

export interface ResponseHead {
  status: number;
  /** Lower-cased names; a repeated header keeps its last value. */
  headers: Map<string, string>;
}

/** The status line and headers of an HTTP/1.1 response (`text` up to, without, the blank line). */
export function parseResponseHead(text: string): ResponseHead | undefined {
  const lines = text.split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0] ?? '');
  if (!status) return undefined;
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { status: Number(status[1]), headers };
}

/** The blank line that ends a response's head. */
const HEAD_END = '\r\n\r\n';

/**
 * The head of an HTTP/1.1 response, gathered over as many reads as it takes. Only the head's bytes
 * become text: the first read usually carries it whole and much of the body after it, which is found
 * in the bytes rather than converted with them.
 */
export class HeadReader {
  private text = '';

  constructor(private readonly maxBytes: number) {}

  /**
   * The next `n` bytes of the answer, at the start of `buf`: the head (undefined when unreadable) and
   * the offset in `buf` where the body starts once the blank line arrived; 'more' until then.
   */
  feed(buf: Buffer, n: number): { head: ResponseHead | undefined; bodyAt: number } | 'more' | 'too long' {
    const prev = this.text.length;
    const scan = Math.min(n, this.maxBytes + HEAD_END.length - prev);
    const at = prev === 0 ? buf.subarray(0, scan).indexOf(HEAD_END) : -1;
    this.text += buf.toString('latin1', 0, at >= 0 ? at + HEAD_END.length : scan);
    const end = this.text.indexOf(HEAD_END);
    if (end < 0) return scan < n || this.text.length > this.maxBytes ? 'too long' : 'more';
    return { head: parseResponseHead(this.text.slice(0, end)), bodyAt: end + HEAD_END.length - prev };
  }
}

interface Slab {
  readonly buf: Buffer;
  used: number;
  /** Chunks carved from it whose writes have not completed. */
  pending: number;
  /** Full: nothing more is carved from it. */
  retired: boolean;
}

/**
 * The memory received bytes are copied into on their way to a client: chunks carved from large
 * slabs, and a slab is reused once every write of its chunks completed. Fresh memory costs page
 * faults on first touch and garbage collections as it is let go; a download of 100 MiB reuses the
 * same few slabs instead.
 */
export class Slabs {
  private current: Slab;
  private readonly spare: Buffer[] = [];

  constructor(
    private readonly slabBytes: number,
    private readonly maxSpare: number,
  ) {
    this.current = this.next();
  }

  /**
   * `n` bytes of `buf` from `from`, copied into a slab (at most `slabBytes`), and what to call once
   * the write of that chunk completed. Never calling it is safe: the slab is then left to the GC.
   */
  copy(buf: Buffer, from: number, n: number): { chunk: Buffer; written: () => void } {
    const slab = this.room(n);
    const chunk = slab.buf.subarray(slab.used, slab.used + n);
    buf.copy(chunk, 0, from, from + n);
    slab.used += n;
    return { chunk, written: hold(slab, (s) => this.recycle(s)) };
  }

  /** The current slab if `n` more bytes fit in it, else a fresh one (the full one retires). */
  private room(n: number): Slab {
    if (n > this.slabBytes - this.current.used) {
      this.current.retired = true;
      this.recycle(this.current);
      this.current = this.next();
    }
    return this.current;
  }

  /**
   * A region of up to `bytes` reserved for one connection's reads (see Lane). The slab is not reused
   * before the lane is released and every write of its chunks completed.
   */
  lane(bytes: number): Lane {
    const slab = this.room(Math.min(bytes, this.slabBytes));
    const space = slab.buf.subarray(slab.used, slab.used + Math.min(bytes, this.slabBytes));
    slab.used += space.length;
    return new Lane(slab, space, (s) => this.recycle(s));
  }

  private recycle(slab: Slab): void {
    if (slab.retired && slab.pending === 0 && this.spare.length < this.maxSpare) this.spare.push(slab.buf);
  }

  private next(): Slab {
    return { buf: this.spare.pop() ?? Buffer.allocUnsafe(this.slabBytes), used: 0, pending: 0, retired: false };
  }
}

/** Counts one more pending use of `slab`; the returned function ends it, once however often it is called. */
function hold(slab: Slab, recycle: (slab: Slab) => void): () => void {
  slab.pending++;
  let called = false;
  return () => {
    if (called) return;
    called = true;
    slab.pending--;
    recycle(slab);
  };
}

/**
 * A connection's reads landing in a slab: the bytes of a body are sent to the client from where they
 * were read, so only the bytes before the lane existed (those that came with the answer's head) are
 * copied. `space` is where the next read lands and moves past each read; the lane holds its slab
 * until `release`, and each chunk taken until its write completed.
 */
export class Lane {
  private readonly reserved: () => void;

  constructor(
    private readonly slab: Slab,
    public space: Buffer,
    private readonly recycle: (slab: Slab) => void,
  ) {
    this.reserved = hold(slab, recycle);
  }

  /** `n` bytes from `from` of the read that just landed in `space`, and what to call once written. */
  take(from: number, n: number): { chunk: Buffer; written: () => void } {
    return { chunk: this.space.subarray(from, from + n), written: hold(this.slab, this.recycle) };
  }

  /** The read of `n` bytes has been handled: the next one lands after it. */
  advance(n: number): void {
    this.space = this.space.subarray(n);
  }

  release(): void {
    this.reserved();
  }
}
