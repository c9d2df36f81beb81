import type { Readable } from 'node:stream';

/**
 * Content up to this size is held in memory from `stage` to `place` and written with one PutObject
 * under its content key, where staging it in the bucket would cost three round trips (PutObject of
 * the staging object, CopyObject into place, DeleteObject of the staging object). Larger content
 * streams to a staging object; the SDK's upload holds up to four 16 MiB parts of it in memory
 * anyway, so this bound adds no new kind of memory use.
 */
export const HELD_IN_MEMORY = 1024 * 1024;

/**
 * Reads `body` until it ends or passes `limit` bytes: `whole` holds every byte of a body that ended
 * within the limit; otherwise `rest` yields the chunks read so far followed by the remainder. A
 * failure of `body` rejects (whole) or fails the iteration of `rest`; leaving that iteration early
 * ends the reading of `body`.
 */
export async function readUpTo(body: Readable, limit: number): Promise<{ whole: Buffer } | { rest: AsyncIterable<Buffer> }> {
  const reader = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const head: Buffer[] = [];
  let bytes = 0;
  for (;;) {
    const next = await reader.next();
    if (next.done) return { whole: Buffer.concat(head, bytes) };
    head.push(next.value);
    bytes += next.value.length;
    if (bytes > limit) break;
  }
  async function* remainder(): AsyncGenerator<Buffer> {
    try {
      yield* head.splice(0);
      for (;;) {
        const next = await reader.next();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      await reader.return?.();
    }
  }
  return { rest: remainder() };
}
