import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';

/** Bytes read at a time. */
export const PIECE_BYTES = 1024 * 1024;

/** Buffers kept from one file's read for the next one's: most hashes are of small files, one after another. */
const KEPT = 8;
const kept: Buffer[] = [];
const take = () => kept.pop() ?? Buffer.allocUnsafeSlow(PIECE_BYTES);

/**
 * Hands `use` a file's bytes front to back, a piece at a time, in two buffers that take turns: the
 * next piece is read while `use` takes the current one, which is valid only until `use` returns.
 * A stream's fresh buffer per read costs more than the read: on a virtual machine whose host takes
 * back freed memory, touching new pages made hashing a 256 MiB file up to 3x slower (docs/BENCHMARKS.md, "New memory").
 */
export async function forEachPiece(path: string, use: (piece: Buffer) => void, signal?: AbortSignal): Promise<number> {
  const fd = await fs.open(path, 'r');
  const buffers = [take(), take()];
  let position = 0;
  let turn = 0;
  const readNext = () => fd.read(buffers[turn]!, 0, PIECE_BYTES, position);
  let reading: ReturnType<typeof readNext> | undefined;
  try {
    reading = readNext();
    for (;;) {
      const { bytesRead, buffer } = await reading;
      reading = undefined;
      if (bytesRead === 0) return position;
      signal?.throwIfAborted();
      position += bytesRead;
      turn ^= 1;
      reading = readNext();
      use(buffer.subarray(0, bytesRead));
    }
  } finally {
    // A read still in flight lands before the descriptor goes.
    await reading?.catch(() => undefined);
    await fd.close();
    for (const buf of buffers) if (kept.length < KEPT) kept.push(buf);
  }
}

/** The SHA-256 of a whole file, and its size, in one read. */
export async function sha256OfFile(path: string, signal?: AbortSignal): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  const size = await forEachPiece(path, (piece) => hash.update(piece), signal);
  return { sha256: hash.digest('hex'), size };
}
