import type { FileHandle } from 'node:fs/promises';

/** Bytes read from the file at a time, the next block always in flight while the current one is used. */
const BLOCK = 4 * 1024 * 1024;

/**
 * Views of a file read front to back, for a reader whose requests only move forward and are at most
 * `maxView` bytes long: the file is read in large blocks with the next one already being read, so a
 * pass that asks for many small pieces (one per chunk) waits for neither a read per piece nor the
 * disk between blocks. Two buffers take turns: the bytes a request still needs from the end of one
 * are copied in front of the next block in the other.
 */
export class SequentialReader {
  private readonly buffers: [Buffer, Buffer];
  private turn = 0;
  /** The current buffer holds bytes [start, end) of the file from index `from`. */
  private from = 0;
  private start = 0;
  private end = 0;
  private ahead: Promise<number> | undefined;

  constructor(
    private readonly fd: FileHandle,
    private readonly size: number,
    private readonly maxView: number,
  ) {
    this.buffers = [Buffer.allocUnsafe(maxView + BLOCK), Buffer.allocUnsafe(maxView + BLOCK)];
  }

  /** Reads BLOCK bytes (fewer at the end) at `position` into the buffer `index`, after its first maxView bytes. */
  private async fill(index: number, position: number): Promise<number> {
    const buf = this.buffers[index]!;
    const want = Math.min(BLOCK, this.size - position);
    let got = 0;
    while (got < want) {
      const { bytesRead } = await this.fd.read(buf, this.maxView + got, want - got, position + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return got;
  }

  /**
   * Bytes [at, at + length) of the file, fewer at its end; valid until the next call. `at` never
   * goes back, and `length` is at most maxView.
   */
  async view(at: number, length: number): Promise<Buffer> {
    if (at < this.start || length > this.maxView) throw new Error('a sequential read went back or asked too much');
    const want = Math.min(length, this.size - at);
    while (at + want > this.end) {
      const next = this.turn ^ 1;
      const got = await (this.ahead ?? this.fill(next, this.end));
      this.ahead = undefined;
      if (got === 0) break;
      // What the request still needs of the current buffer goes in front of the block just read.
      const keepFrom = Math.max(at, this.start);
      const keep = this.end - keepFrom;
      const into = this.buffers[next]!;
      this.buffers[this.turn]!.copy(into, this.maxView - keep, this.from + (keepFrom - this.start), this.from + (this.end - this.start));
      this.from = this.maxView - keep;
      this.start = keepFrom;
      this.end += got;
      this.turn = next;
      if (this.end < this.size) {
        this.ahead = this.fill(this.turn ^ 1, this.end);
        // Awaited by the next call; a failure before then must not go unhandled.
        this.ahead.catch(() => undefined);
      }
    }
    const offset = this.from + (at - this.start);
    return this.buffers[this.turn]!.subarray(offset, offset + Math.max(0, Math.min(want, this.end - at)));
  }

  /** Lets a read still in flight finish, so the descriptor can be closed. */
  async settle(): Promise<void> {
    await this.ahead?.catch(() => undefined);
  }
}
