import { existsSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { unpackChunks, type ContentChunk } from '../../shared/protocol/chunking';

/** Pieces sent to the thread and not yet cut: enough to keep it busy, few enough to bound memory. */
const AHEAD = 4;

/**
 * Cuts contents on one thread at the lowest CPU priority (chunk-list.thread.ts), one content at a
 * time. Undefined where the thread's compiled file is absent (the tests run the sources); the job
 * then cuts on the worker's own thread.
 */
export function lowPriorityCutter(): ((pieces: AsyncIterable<Buffer>) => Promise<ContentChunk[]>) | undefined {
  const file = path.join(__dirname, 'chunk-list.thread.js');
  if (!existsSync(file)) return undefined;
  let thread: Worker | undefined;
  return async (pieces) => {
    const worker = (thread ??= new Worker(file).on('exit', () => (thread = undefined)));
    worker.unref();
    let inFlight = 0;
    let wake: (() => void) | undefined;
    let failed: Error | undefined;
    let done: ((packed: Uint8Array) => void) | undefined;
    const onMessage = (m: { cut?: true; packed?: Uint8Array }) => {
      if (m.cut) inFlight--;
      else if (m.packed) done?.(m.packed);
      wake?.();
    };
    const onError = (err: Error) => {
      failed = err;
      wake?.();
    };
    worker.on('message', onMessage).on('error', onError);
    try {
      try {
        for await (const piece of pieces) {
          while (inFlight >= AHEAD && !failed) await new Promise<void>((r) => (wake = r));
          if (failed) throw failed;
          inFlight++;
          worker.postMessage({ piece });
        }
      } catch (err) {
        // A content read in part leaves the thread mid-chunk: the next content starts on a new one.
        await worker.terminate();
        throw err;
      }
      const packed = await new Promise<Uint8Array>((resolve, reject) => {
        done = resolve;
        wake = () => failed && reject(failed);
        worker.postMessage({ end: true });
      });
      return unpackChunks(Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength));
    } finally {
      worker.off('message', onMessage).off('error', onError);
    }
  };
}
