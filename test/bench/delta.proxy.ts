import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';
import { performance } from 'node:perf_hooks';

/** Pieces a throttled stream passes at a time: small enough that pacing is smooth at 12.5 MB/s. */
const PIECE = 64 * 1024;

/**
 * One direction of a link: a token bucket that lets `bytesPerSecond` through (0: no limit), shared by
 * every request going that way at once, with at most one piece of burst.
 */
export class LinkDirection {
  private free = 0;

  constructor(public bytesPerSecond = 0) {}

  /** Resolves when `n` more bytes may go. */
  async take(n: number): Promise<void> {
    if (!this.bytesPerSecond) return;
    const now = performance.now();
    this.free = Math.max(now, this.free) + (n * 1000) / this.bytesPerSecond;
    const wait = this.free - now - (PIECE * 1000) / this.bytesPerSecond;
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
  }
}

class Paced extends Transform {
  constructor(private readonly direction: LinkDirection) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    void (async () => {
      for (let at = 0; at < chunk.length; at += PIECE) {
        const piece = chunk.subarray(at, at + PIECE);
        await this.direction.take(piece.length);
        this.push(piece);
      }
    })().then(() => done(), done);
  }
}

/**
 * A device's link to the gateway: a proxy that counts the body bytes the device sends and receives
 * and, when `throttle` names a rate, paces each direction to it (a 100 Mbit/s link: 12.5 MB/s each way).
 */
export async function deviceLink(target: URL) {
  const counts = { sent: 0, received: 0 };
  const up = new LinkDirection();
  const down = new LinkDirection();
  const server = http.createServer((req, res) => {
    req.on('data', (d: Buffer) => (counts.sent += d.length));
    const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      answer.on('data', (d: Buffer) => (counts.received += d.length));
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(new Paced(down)).pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(new Paced(up)).pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    /** Bytes per second each way; 0: loopback speed. */
    throttle(bytesPerSecond: number) {
      up.bytesPerSecond = down.bytesPerSecond = bytesPerSecond;
    },
    close: () => new Promise((r) => server.close(r)),
  };
}
