import { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { constants } from 'node:os';
import path from 'node:path';
import { TLSSocket } from 'node:tls';

/** The native half: shared/native/socket_splice.c. */
interface NativeSplice {
  start(from: number, to: number, length: number, idleMs: number, done: (error: number, moved: number, taken: number, atDestination: boolean) => void): object;
  cancel(handle: object): void;
}

/** Bodies shorter than this are copied: a thread per transfer costs more than the copy it saves. */
const MIN_SPLICE_BYTES = 256 * 1024;
/** Transfers moving at once; more are copied through the event loop as before. */
const MAX_SPLICES = 64;
const EMPTY = Buffer.alloc(0);
const { EINVAL, ENOSYS, EOPNOTSUPP, EPERM } = constants.errno;
/** What a kernel or sandbox without splice for these sockets answers. */
const REFUSALS = new Set([EINVAL, ENOSYS, EOPNOTSUPP, EPERM]);

/** The addon built by `npm ci` (package.json, "install"), from the sources or the compiled tree. */
function load(): NativeSplice | undefined {
  if (process.platform !== 'linux') return undefined;
  for (const root of [path.resolve(__dirname, '../../native'), path.resolve(__dirname, '../../../../shared/native')]) {
    try {
      return require(path.join(root, 'build/Release/socket_splice.node')) as NativeSplice;
    } catch {
      // Not built there: the next place, then the copying path.
    }
  }
  return undefined;
}

const native = load();

/** The descriptor under a socket of Node's, when it has one (a TCP or pipe handle). */
const fdOf = (socket: Socket): number => {
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : -1;
};

/**
 * How a relay ended: every byte is in the client's socket; nothing was moved and the caller should
 * copy the body after all; or the client's connection failed (it went away).
 */
export type RelayEnd = 'moved' | 'declined' | 'client gone';

/** A body being moved inside the kernel; `done` rejects when the store's side fails. */
export interface Relay {
  done: Promise<RelayEnd>;
  /** Stops the transfer (the client went away); `done` then rejects with ECANCELED. */
  cancel(): void;
}

/**
 * Relays the rest of an object store's answer to the client with splice(2): the bytes go from one
 * socket to the other through a pipe, never into the gateway's memory: about 40% less of the
 * gateway's CPU per MiB of a download, which on two cores RGW and the client need (docs/BENCHMARKS.md,
 * "What limits each figure").
 *
 * Used only where the client's socket carries nothing but this response's body from here on: a plain
 * TCP response (no TLS) with a Content-Length, the response the connection is on, everything written
 * before it already in the kernel. Anywhere else, and without the addon, the body is copied.
 */
export class SocketSplice {
  private moving = 0;
  /** Set once the kernel refuses splice on these sockets (a sandbox, an unusual socket): copied from then on. */
  private refused = false;

  /** Whether the addon is loaded: false off Linux, or where it was not built. */
  static get available(): boolean {
    return native !== undefined;
  }

  /**
   * Starts moving `length` bytes from `from` into `dest`'s socket, or returns undefined when `dest`
   * is not one to splice into. The caller pauses `from` and writes nothing to `dest` until `done`.
   */
  relay(from: Socket, dest: unknown, length: number, idleMs: number): Relay | undefined {
    if (!native || this.refused || length < MIN_SPLICE_BYTES || this.moving >= MAX_SPLICES || !(dest instanceof ServerResponse)) return undefined;
    const to = dest.socket;
    const current = (to as (Socket & { _httpMessage?: unknown }) | null)?._httpMessage === dest;
    if (!to || !current || to instanceof TLSSocket || dest.chunkedEncoding || dest.getHeader('content-length') === undefined || fdOf(to) < 0 || fdOf(from) < 0) return undefined;
    this.moving++;
    let handle: object | undefined;
    let stopped = false;
    const done = new Promise<RelayEnd>((resolve, reject) => {
      const begin = () => {
        const toFd = fdOf(to);
        const fromFd = fdOf(from);
        if (stopped || dest.writableLength > 0 || toFd < 0 || fromFd < 0) return resolve('declined');
        try {
          handle = native.start(fromFd, toFd, length, idleMs, (error, moved, taken, atDestination) => {
            if (REFUSALS.has(error)) this.refused = true;
            if (error === 0) resolve('moved');
            // Refused before anything was taken from the store's socket: the body can still be copied.
            else if (taken === 0 && REFUSALS.has(error)) resolve('declined');
            else if (atDestination && !REFUSALS.has(error)) resolve('client gone');
            else reject(new Error(spliceError(error, moved, length)));
          });
        } catch {
          resolve('declined');
        }
      };
      if (!dest.headersSent) dest.flushHeaders();
      // Nothing left to write means every byte written so far is in the kernel (a write the kernel
      // took whole completes at once); else the callback of an empty write says when it is.
      if (dest.writableLength === 0) begin();
      else to.write(EMPTY, (err) => (err ? resolve('declined') : begin()));
    }).finally(() => {
      this.moving--;
    });
    return {
      done,
      cancel: () => {
        stopped = true;
        if (handle) native.cancel(handle);
      },
    };
  }
}

function spliceError(error: number, moved: number, length: number): string {
  const name = Object.entries(constants.errno as Record<string, number>).find(([, n]) => n === error)?.[0];
  const why = error === -1 ? 'the object store closed the connection mid-object' : (name ?? `errno ${error}`);
  return `relaying the object: ${why} after ${moved} of ${length} bytes`;
}
