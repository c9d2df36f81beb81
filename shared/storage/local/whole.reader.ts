import { Worker } from 'node:worker_threads';

/** A whole small file to read into `into`, a view of shared memory; `crc32`: whether to take the bytes' CRC-32. */
export interface WholeRead {
  file: string;
  into: Buffer;
  crc32: boolean;
}

/** The file's size when it was read, how many of its bytes landed in `into` and their CRC-32 when asked, or why it could not be read. */
export type WholeResult = { size: number; read: number; crc32?: number } | { code: string; message: string };

/** Reading threads: two keep reading while one is descheduled on a busy machine, and cost nothing idle. */
const THREADS = 2;

/**
 * Shared buffers a reading thread holds at most: each is handed over once and then named by its
 * number, rather than sent again with every batch that reads into it.
 */
const SHARED_PER_THREAD = 16;

interface Job {
  id: number;
  /** Buffers to hold from now on, under their numbers, and numbers to let go of once this job is read. */
  share: { n: number; sab: SharedArrayBuffer }[];
  forget: number[];
  items: { file: string; n: number; offset: number; length: number; crc32: boolean }[];
}

/**
 * The worker's body, run from its source text (so it runs the same compiled or not). Reads each
 * file with blocking calls, which cost a few microseconds each for a cached file, and answers once
 * per batch, with each file's CRC-32 taken while its bytes are in the cache: a trip through libuv's
 * pool per open and per read costs two thread hand-overs each, which on a busy machine take far
 * longer than the calls.
 */
function readerMain(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const fs = require('node:fs') as typeof import('node:fs');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { parentPort } = require('node:worker_threads') as typeof import('node:worker_threads');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { crc32 } = require('node:zlib') as typeof import('node:zlib');
  const shared = new Map<number, SharedArrayBuffer>();
  const probe = new Uint8Array(1);
  parentPort!.on('message', (job: Job) => {
    for (const { n, sab } of job.share) shared.set(n, sab);
    const results = job.items.map((item) => {
      let fd: number | undefined;
      try {
        fd = fs.openSync(item.file, 'r');
        // No fstat, which costs more than the read of a small file: a folder (a composite) fails the
        // read with EISDIR, a shorter file ends early, and one byte more tells a longer one.
        const view = new Uint8Array(shared.get(item.n)!, item.offset, item.length);
        let read = 0;
        while (read < item.length) {
          const n = fs.readSync(fd, view, read, item.length - read, read);
          if (n === 0) break;
          read += n;
        }
        const size = read === item.length && fs.readSync(fd, probe, 0, 1, read) > 0 ? fs.fstatSync(fd).size : read;
        return { size, read, crc32: item.crc32 ? crc32(view.subarray(0, read)) : undefined };
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        return { code: e.code ?? 'EIO', message: e.message };
      } finally {
        if (fd !== undefined) fs.closeSync(fd);
      }
    });
    // After the reads: a buffer let go of in this job may still be read into by one of its items.
    for (const n of job.forget) shared.delete(n);
    parentPort!.postMessage({ id: job.id, results });
  });
}

/**
 * Reads small files whole on a thread of its own, many per trip, into buffers over shared memory:
 * the event loop never waits on the disk, and a batch costs two hand-overs whatever its size.
 */
export class WholeReader {
  private readonly workers: (Worker | undefined)[] = Array.from({ length: THREADS }, () => undefined);
  /** Per thread, the buffers it holds and their numbers, least recently used first (a Map keeps insertion order). */
  private readonly shared: Map<SharedArrayBuffer, number>[] = Array.from({ length: THREADS }, () => new Map());
  private next = 1;
  private nextShared = 1;
  private readonly pending = new Map<number, { resolve: (r: WholeResult[]) => void; reject: (err: Error) => void; worker: Worker }>();

  read(items: WholeRead[]): Promise<WholeResult[]> {
    if (items.some(({ into }) => !(into.buffer instanceof SharedArrayBuffer))) throw new Error('whole reads land in shared memory only');
    const job: Job = { id: this.next++, share: [], forget: [], items: [] };
    const slot = job.id % THREADS;
    const worker = this.start(slot);
    const held = this.shared[slot]!;
    for (const { file, into, crc32 } of items) {
      const sab = into.buffer as SharedArrayBuffer;
      let n = held.get(sab);
      if (n === undefined) {
        n = this.nextShared++;
        job.share.push({ n, sab });
        // The thread drops what this side drops, so both sides always agree on what it holds.
        if (held.size >= SHARED_PER_THREAD) {
          const [oldest, m] = held.entries().next().value as [SharedArrayBuffer, number];
          held.delete(oldest);
          job.forget.push(m);
        }
      } else {
        held.delete(sab);
      }
      held.set(sab, n);
      job.items.push({ file, n, offset: into.byteOffset, length: into.length, crc32 });
    }
    // A thread holds the process only while a batch of its own is out.
    worker.ref();
    return new Promise((resolve, reject) => {
      this.pending.set(job.id, { resolve, reject, worker });
      worker.postMessage(job);
    });
  }

  private start(slot: number): Worker {
    const running = this.workers[slot];
    if (running) return running;
    const worker = new Worker(`(${readerMain.toString()})()`, { eval: true });
    worker.on('message', ({ id, results }: { id: number; results: WholeResult[] }) => {
      const p = this.pending.get(id);
      this.pending.delete(id);
      if (![...this.pending.values()].some((q) => q.worker === worker)) worker.unref();
      p?.resolve(results);
    });
    const fail = (err: Error) => {
      if (this.workers[slot] === worker) {
        this.workers[slot] = undefined;
        // A new thread holds nothing yet.
        this.shared[slot]!.clear();
      }
      for (const [id, p] of this.pending) {
        if (p.worker !== worker) continue;
        this.pending.delete(id);
        p.reject(err);
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the reading thread exited (${code})`)));
    this.workers[slot] = worker;
    this.shared[slot]!.clear();
    return worker;
  }
}
