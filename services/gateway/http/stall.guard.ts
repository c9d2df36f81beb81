import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How a watched response stood at the last look. */
interface Watch {
  /** Bytes of the connection whose write had completed (handed to the kernel). */
  flushed: number;
  /** Epoch ms of the last look that found progress, or nothing waiting to be sent. */
  progressAt: number;
}

/** Bytes written to the socket that are no longer waiting in Node's buffers. */
const flushedBytes = (socket: Socket): number => socket.bytesWritten - socket.writableLength;

/**
 * Closes the connection of a response whose reader has stopped reading: bytes wait to be sent and
 * none has left for `stallMs`. A response with nothing waiting (a held change-feed request, a slow
 * handler) is never stalled, and neither is a request still being received. Closing the socket
 * destroys the response, which ends the read of the content behind it (the store's stream is
 * destroyed with it, see services/gateway/http/coalesced.pipe.ts), so a reader that stops holds
 * its socket and the bytes already buffered for it, for `stallMs` at most.
 *
 * One timer looks at every response in flight; the bound is `stallMs` plus one look (a quarter of
 * it, at most 5 s).
 */
export class StallGuard {
  private readonly watched = new Map<ServerResponse, Watch>();
  private readonly timer: NodeJS.Timeout;
  /** Connections closed for a stall, for metrics and tests. */
  closed = 0;

  constructor(
    server: Server,
    private readonly stallMs: number,
  ) {
    server.on('request', (_req, res: ServerResponse) => {
      this.watched.set(res, { flushed: 0, progressAt: Date.now() });
      res.once('close', () => this.watched.delete(res));
    });
    server.once('close', () => clearInterval(this.timer));
    this.timer = setInterval(() => this.look(Date.now()), Math.max(50, Math.min(5000, Math.floor(stallMs / 4))));
    this.timer.unref();
  }

  private look(now: number): void {
    for (const [res, watch] of this.watched) {
      const socket = res.socket;
      if (!socket || socket.destroyed) continue;
      const flushed = flushedBytes(socket);
      const waiting = socket.writableLength > 0 || res.writableNeedDrain;
      if (!waiting || flushed !== watch.flushed) {
        watch.flushed = flushed;
        watch.progressAt = now;
        continue;
      }
      if (now - watch.progressAt >= this.stallMs) {
        this.watched.delete(res);
        this.closed += 1;
        socket.destroy();
      }
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
