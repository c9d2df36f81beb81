import { close, closeSync, open, read } from 'node:fs';
import { promisify } from 'node:util';
import type { Writable } from 'node:stream';

/*
 * The local driver's reads of descriptors: its pool of read buffers, reused from download to
 * download, the copy from a descriptor to a stream that reads through them, and the calls its read
 * streams make.
 */

/** Buffers kept for the next download once their bytes have left; more are allocated when needed. */
const KEPT = 8;
const kept: Buffer[] = [];

/**
 * A buffer of `size` bytes, reused when one is kept. Buffers outside V8's heap count towards its
 * external memory, and every 64 MB of them allocated starts a full collection of the heap, which in
 * the gateway is large: with a fresh buffer per read, those collections were most of a download's CPU.
 */
function take(size: number): Buffer {
  const buf = kept.pop();
  return buf?.length === size ? buf : Buffer.allocUnsafeSlow(size);
}

function keep(buf: Buffer): void {
  if (kept.length < KEPT) kept.push(buf);
}

/**
 * Reads of 1 MiB rather than the stock 64 KiB: a fraction of the reads, writes and event-loop turns
 * per file (the transfer bench shows the difference). A range reads no more than it needs.
 */
export const READ_CHUNK = 1024 * 1024;

// Integer descriptors read by fs read streams, as a static file server reads: a FileHandle's stream
// reads through promises and allocates more per read, and downloads are bound by reads and garbage.
export const openFd = (file: string) => promisify(open)(file, 'r');
export const closeFd = promisify(close);
/** Up to `length` bytes at `position` into `buf` from `offset`; resolves with their count. */
export const readAt = (fd: number, buf: Buffer, offset: number, length: number, position: number) =>
  new Promise<number>((resolve, reject) => read(fd, buf, offset, length, position, (err, n) => (err ? reject(err) : resolve(n))));

/**
 * Settles once `dest` has handed `chunk` on (to the socket, for a response), or has closed: a
 * response whose connection is destroyed does not always call back a write still waiting, and the
 * descriptor must not wait for it.
 */
const writeTo = (dest: Writable, chunk: Buffer) =>
  new Promise<void>((resolve, reject) => {
    const closed = () => reject(new Error('the destination closed before the write completed'));
    dest.once('close', closed);
    dest.write(chunk, (err) => {
      dest.off('close', closed);
      if (err) reject(err);
      else resolve();
    });
  });

/**
 * Writes bytes [start, end) of the open descriptor `fd` into `dest`, reading the next chunk while
 * the last one is being written, in two buffers of `chunkSize` reused from download to download: a
 * buffer goes back only once its write has completed, so no byte still to be sent is overwritten (a
 * failed write's buffer is dropped). Stops early, without error, when `dest` is destroyed (the client
 * went away); a read failure, or a file shorter than `end`, rejects. Never closes `fd` or ends `dest`.
 */
export async function writeDescriptor(fd: number, dest: Writable, start: number, end: number, chunkSize: number): Promise<void> {
  let position = start;
  let writing: { buf: Buffer; done: Promise<void> } | undefined;
  try {
    while (position < end && !dest.destroyed) {
      const buf = take(chunkSize);
      let n: number;
      try {
        n = await readAt(fd, buf, 0, Math.min(chunkSize, end - position), position);
      } catch (err) {
        keep(buf);
        throw err;
      }
      if (n === 0) {
        keep(buf);
        throw new Error('the content is shorter than its size');
      }
      position += n;
      if (writing) {
        await writing.done;
        keep(writing.buf);
        writing = undefined;
      }
      if (dest.destroyed) {
        keep(buf);
        return;
      }
      writing = { buf, done: writeTo(dest, buf.subarray(0, n)) };
      // A rejection is awaited below; until then it must not count as unhandled.
      writing.done.catch(() => undefined);
    }
    if (writing) {
      await writing.done;
      keep(writing.buf);
    }
  } catch (err) {
    // The client went away while a write was pending: not a failure of the read.
    if (dest.destroyed) return;
    throw err;
  }
}

/**
 * The calls a read stream makes on a descriptor, with its close made at once: closing a descriptor
 * opened for reading writes nothing back and does not wait for the disk, and a trip through libuv's
 * thread pool (a hand-over to a pool thread and back) costs more than the call. Reads stay in the pool.
 */
export const READ_FS = {
  open,
  read,
  close: (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => {
    try {
      closeSync(fd);
    } catch (err) {
      done(err as NodeJS.ErrnoException);
      return;
    }
    done(null);
  },
};
