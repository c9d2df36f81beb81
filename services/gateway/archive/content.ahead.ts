import type { Readable } from 'node:stream';
import type { ContentHandle, ContentStore } from '../../../shared/storage/content.store';
import { Budget, CHUNK, Slabs, type Slab } from './ahead.memory';

/** What a file to read ahead needs: where its content is, how many bytes it holds, and its CRC-32 when known. */
export interface AheadEntry {
  storageKey: string;
  sizeBytes: number;
  crc32?: number | null;
}

/** Room to leave before and after a file's bytes read whole, so that it leaves in one write with its framing. */
export type Framing<E> = (entry: E) => { head: number; tail: number };

/** Files read ahead of the one being written, at most: the descriptors or requests in flight. */
const AHEAD_ENTRIES = 64;
/** Small files read whole per trip, on a store that reads many at once. */
const BATCH = 16;
/** Bytes read ahead of the writer and not yet handed to the socket, at most: the archive's memory. */
const AHEAD_BYTES = 8 * 1024 * 1024;

/** Bytes to write; `release` gives their memory back once the socket has taken them. */
export interface Piece {
  bytes: Buffer;
  /** `bytes` with room before and after for the entry's header and descriptor, when the reads made it. */
  framed?: Buffer;
  /** Their CRC-32 when the store took it as it read them (the piece is then the whole content). */
  crc32?: number;
  release(): void;
}

/** One file's content as it is read: its pieces in order, then its end or the reason it has none. */
export class Fetch<E extends AheadEntry = AheadEntry> {
  private readonly pieces: Piece[] = [];
  private done = false;
  private error: unknown;
  private wake: (() => void) | undefined;

  constructor(readonly entry: E) {}

  push(piece: Piece): void {
    this.pieces.push(piece);
    this.nudge();
  }

  finish(error?: unknown): void {
    this.done = true;
    this.error = error;
    this.nudge();
  }

  /** The next piece, or undefined once all were taken; rejects with a read's failure. */
  next(): Piece | undefined | Promise<Piece | undefined> {
    const piece = this.pieces.shift();
    if (piece) return piece;
    if (this.done) {
      if (this.error !== undefined) return Promise.reject(this.error);
      return undefined;
    }
    return new Promise<void>((resolve) => (this.wake = resolve)).then(() => this.next());
  }

  private nudge(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
}

/**
 * Reads the contents of `entries` ahead of the ZIP writer, in their order, within AHEAD_ENTRIES
 * files and AHEAD_BYTES: a folder of many small files is bound by the store's round trips (open,
 * read, close) rather than by bytes, so those trips overlap with each other and with the writing.
 * On a store that reads into the caller's buffers (local disk) the bytes land in reused slabs; on an
 * object store each file is one GET whose body chunks are held as they come.
 */
export class ContentAhead<E extends AheadEntry> {
  private readonly queue: Fetch<E>[] = [];
  private readonly slabs = new Slabs();
  private readonly budget = new Budget(AHEAD_BYTES);
  private inFlight = 0;
  private listed = false;
  private failure: unknown;
  private stopped = false;
  private wakeWriter: (() => void) | undefined;
  private wakeReader: (() => void) | undefined;
  /** Small files cut from slabs, to be read whole in one trip. */
  private batch: { fetch: Fetch<E>; bytes: Buffer; framed: Buffer; slab: Slab }[] = [];
  private flushing: NodeJS.Immediate | undefined;
  /** Object-store bodies being read, destroyed when the archive stops. */
  private readonly streams = new Set<Readable>();

  constructor(
    private readonly store: ContentStore,
    entries: AsyncIterable<E>,
    private readonly framing?: Framing<E>,
  ) {
    void this.run(entries);
  }

  /** The next file, its content being read, or undefined after the last; rejects when listing failed. */
  async next(): Promise<Fetch<E> | undefined> {
    for (;;) {
      if (this.failure !== undefined) throw this.failure;
      const fetch = this.queue.shift();
      if (fetch) return fetch;
      if (this.listed || this.stopped) return undefined;
      await new Promise<void>((resolve) => (this.wakeWriter = resolve));
    }
  }

  /** The next file when it is listed already, else undefined (`next` waits for it); throws when listing failed. */
  take(): Fetch<E> | undefined {
    if (this.failure !== undefined) throw this.failure;
    return this.queue.shift();
  }

  /** The writer has written a file whole: another may be read ahead. */
  written(): void {
    this.inFlight--;
    this.wakeRead();
  }

  /** Once the archive is written whole. */
  finish(): void {
    this.slabs.close();
  }

  /**
   * Stops reading (the response is gone or failed): waiters are let go, object-store bodies
   * destroyed; a file being read is closed once its read returns. Pieces not yet written are never
   * released, so no slab goes back to the pool while a read may still land in it.
   */
  stop(): void {
    this.stopped = true;
    this.budget.abort();
    this.wakeRead();
    for (const stream of this.streams) stream.destroy();
    this.streams.clear();
  }

  /** A piece's memory returns once the socket took its bytes. */
  private piece(bytes: Buffer, slab?: Slab, crc32?: number, framed?: Buffer): Piece {
    return {
      bytes,
      crc32,
      framed,
      release: () => {
        this.budget.give((framed ?? bytes).length);
        if (slab) this.slabs.release(slab);
      },
    };
  }

  private async run(entries: AsyncIterable<E>): Promise<void> {
    try {
      for await (const entry of entries) {
        while (this.inFlight >= AHEAD_ENTRIES && !this.stopped) await new Promise<void>((resolve) => (this.wakeReader = resolve));
        if (this.stopped) return;
        const fetch = new Fetch<E>(entry);
        this.inFlight++;
        this.queue.push(fetch);
        this.wake();
        const frame = this.store.readWhole ? (this.framing?.(entry) ?? { head: 0, tail: 0 }) : undefined;
        const whole = entry.sizeBytes + (frame ? frame.head + frame.tail : 0);
        if (whole <= CHUNK) {
          // Reserved in order, read at once: several small files are read at the same time.
          await this.budget.take(whole);
          if (this.stopped) return;
          if (frame) this.readWhole(fetch, frame);
          else void this.read(fetch, true);
        } else {
          await this.read(fetch, false);
        }
      }
      this.listed = true;
    } catch (err) {
      this.failure = err;
    }
    this.wake();
  }

  private wakeRead(): void {
    const w = this.wakeReader;
    this.wakeReader = undefined;
    w?.();
  }

  private wake(): void {
    const w = this.wakeWriter;
    this.wakeWriter = undefined;
    w?.();
  }

  /**
   * Queues a small file for the next batch, sent when full or once this turn of the event loop has
   * listed what it could: on a busy machine each trip to a reading thread costs more than the read.
   */
  private readWhole(fetch: Fetch<E>, { head, tail }: { head: number; tail: number }): void {
    const { bytes: framed, slab } = this.slabs.cut(head + fetch.entry.sizeBytes + tail);
    this.batch.push({ fetch, bytes: framed.subarray(head, head + fetch.entry.sizeBytes), framed, slab });
    if (this.batch.length >= BATCH) this.flush();
    else this.flushing ??= setImmediate(() => this.flush());
  }

  private flush(): void {
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = undefined;
    const batch = this.batch;
    this.batch = [];
    if (batch.length === 0 || this.stopped) return;
    this.store.readWhole!(batch.map(({ fetch, bytes }) => ({ key: fetch.entry.storageKey, into: bytes, crc32: fetch.entry.crc32 == null }))).then(
      (results) =>
        results.forEach((r, i) => {
          const { fetch, bytes, framed, slab } = batch[i]!;
          const { storageKey, sizeBytes } = fetch.entry;
          if (r instanceof Error) return fetch.finish(r);
          if (r.size !== sizeBytes || r.read !== sizeBytes) return fetch.finish(new Error(`the content of ${storageKey} is ${r.size} bytes, not ${sizeBytes}`));
          fetch.push(this.piece(bytes, slab, r.crc32, framed));
          fetch.finish();
        }),
      (err: unknown) => batch.forEach(({ fetch }) => fetch.finish(err)),
    );
  }

  /** Reads one file into its pieces; a failure is the writer's to meet when it reaches the file. */
  private async read(fetch: Fetch<E>, small: boolean): Promise<void> {
    const { storageKey, sizeBytes } = fetch.entry;
    let handle: ContentHandle | undefined;
    try {
      handle = await this.store.open(storageKey);
      if (this.stopped) return;
      if (handle.size !== sizeBytes) throw new Error(`the content of ${storageKey} is ${handle.size} bytes, not ${sizeBytes}`);
      if (handle.readInto) {
        await this.readInto(fetch, handle, small);
      } else {
        // The body's stream releases the handle when it ends, fails or is destroyed.
        const h = handle;
        handle = undefined;
        await this.readStream(fetch, h, small);
      }
      fetch.finish();
    } catch (err) {
      fetch.finish(err);
    } finally {
      await handle?.close().catch(() => undefined);
    }
  }

  /** Into slabs, a chunk at a time; a small file's bytes were reserved already. */
  private async readInto(fetch: Fetch<E>, handle: ContentHandle, reserved: boolean): Promise<void> {
    const size = fetch.entry.sizeBytes;
    for (let position = 0; position < size && !this.stopped; ) {
      const n = Math.min(CHUNK, size - position);
      if (!reserved) await this.budget.take(n);
      if (this.stopped) return;
      const { bytes, slab } = this.slabs.cut(n);
      for (let filled = 0; filled < n; ) {
        const got = await handle.readInto!(bytes.subarray(filled), position + filled);
        if (got === 0) throw new Error(`the content of ${fetch.entry.storageKey} is shorter than its size`);
        filled += got;
      }
      position += n;
      fetch.push(this.piece(bytes, slab));
    }
  }

  /** From the store's response body, its chunks held as they come (one GET per file). */
  private async readStream(fetch: Fetch<E>, handle: ContentHandle, reserved: boolean): Promise<void> {
    const size = fetch.entry.sizeBytes;
    if (size === 0) return handle.close();
    const stream = await handle.read({ start: 0, end: size - 1 });
    this.streams.add(stream);
    if (this.stopped) stream.destroy();
    let got = 0;
    try {
      for await (const chunk of stream) {
        const bytes = chunk as Buffer;
        got += bytes.length;
        if (got > size) throw new Error(`the content of ${fetch.entry.storageKey} is longer than its size`);
        if (!reserved) await this.budget.take(bytes.length);
        if (this.stopped) return;
        fetch.push(this.piece(bytes));
      }
    } finally {
      this.streams.delete(stream);
      stream.destroy();
    }
    if (got < size) throw new Error(`the content of ${fetch.entry.storageKey} is shorter than its size`);
  }
}
