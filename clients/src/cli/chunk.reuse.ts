import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { CHUNKING, ContentChunker, type ContentChunk } from '../../../shared/protocol/chunking';
import { forEachPiece, PIECE_BYTES } from './file.pieces';
import { SequentialReader } from './sequential.reader';

/** From this size on, the whole file's SHA-256 is taken on a thread of its own, beside the chunks' on the main one. */
export const THREAD_FROM = 64 * 1024 * 1024;

// Blocking reads into one buffer: the thread does nothing else, and a fresh buffer per read costs more than the read (file.pieces.ts).
const HASHER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
let fd;
try {
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafeSlow(${PIECE_BYTES});
  fd = fs.openSync(workerData, 'r');
  for (let position = 0, n; (n = fs.readSync(fd, buf, 0, buf.length, position)) > 0; position += n) hash.update(buf.subarray(0, n));
  parentPort.postMessage({ sha256: hash.digest('hex') });
} catch (err) {
  parentPort.postMessage({ error: err.message });
} finally {
  if (fd !== undefined) fs.closeSync(fd);
}
`;

/** The SHA-256 of a whole file read again by a thread: the two hashes take two cores rather than one twice as long. */
export function sha256InThread(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(HASHER, { eval: true, workerData: path });
    worker.once('message', (m: { sha256?: string; error?: string }) => (m.sha256 ? resolve(m.sha256) : reject(new Error(m.error))));
    worker.once('error', reject);
    worker.once('exit', () => reject(new Error('the hashing thread ended without a digest')));
  });
}

/**
 * The chunks of a file on disk and the SHA-256 of the whole, given the chunk list of an earlier
 * content of it: exactly what cutting the whole file gives, at the cost of SHA-256 over the bytes a
 * base chunk still covers and of cutting only around the changes. A cut depends only on the bytes
 * from its chunk's start, so bytes equal to a base chunk, starting where a chunk starts, are that
 * chunk again; the base's last chunk, which ended with its content rather than at a cut, counts only
 * at the end of the file. After a changed region, a cut chunk equal to a base chunk gives the shift
 * from which base chunks are expected again. A large file's whole SHA-256 is taken by a second read
 * on another thread meanwhile; a file written during the two reads fails the digest checks
 * downstream (the service's, or the download's), never passes them.
 */
export async function chunkFileAgainst(path: string, base: ContentChunk[]): Promise<{ chunks: ContentChunk[]; sha256: string; size: number }> {
  const fd = await fs.open(path, 'r');
  let threaded: Promise<string> | undefined;
  try {
    const size = (await fd.stat()).size;
    if (size >= THREAD_FROM) {
      threaded = sha256InThread(path);
      // Awaited below; a failure before then must not go unhandled.
      threaded.catch(() => undefined);
    }
    const byStart = new Map<number, ContentChunk>();
    const byHash = new Map<string, ContentChunk>();
    base.forEach((c, i) => {
      if (i < base.length - 1) byStart.set(c.offset, c);
      byHash.set(`${c.sha256}:${c.length}`, c);
    });
    const last = base[base.length - 1];
    const whole = createHash('sha256');
    const chunks: ContentChunk[] = [];
    const reader = new SequentialReader(fd, size, CHUNKING.maxBytes);
    const readAt = (offset: number, length: number) => reader.view(offset, length);
    let shift = 0;
    for (let at = 0; at < size; ) {
      let expected = byStart.get(at - shift);
      if (!expected && last && last.offset === at - shift && at + last.length === size) expected = last;
      if (expected && at + expected.length <= size) {
        const bytes = await readAt(at, expected.length);
        const sha256 = createHash('sha256').update(bytes).digest('hex');
        if (sha256 === expected.sha256) {
          if (!threaded) whole.update(bytes);
          chunks.push({ offset: at, length: bytes.length, sha256 });
          at += bytes.length;
          continue;
        }
      }
      // Cut one chunk here: it ends within CHUNKING.maxBytes, or with the file.
      const bytes = await readAt(at, Math.min(CHUNKING.maxBytes, size - at));
      const chunker = new ContentChunker();
      const cut = chunker.update(bytes)[0] ?? chunker.finish()[0]!;
      if (!threaded) whole.update(bytes.subarray(0, cut.length));
      const chunk = { offset: at, length: cut.length, sha256: cut.sha256 };
      chunks.push(chunk);
      const same = byHash.get(`${chunk.sha256}:${chunk.length}`);
      if (same) shift = chunk.offset - same.offset;
      at += cut.length;
    }
    await reader.settle();
    return { chunks, sha256: threaded ? await threaded : whole.digest('hex'), size };
  } finally {
    await fd.close();
  }
}

/**
 * The chunks of a file on disk, and the SHA-256 of the whole: in one read, or for a large file with
 * the whole's SHA-256 taken by a second read on another thread meanwhile (two cores rather than one
 * twice as long). A file written during the reads fails the digest checks downstream.
 */
export async function chunkFile(path: string, signal?: AbortSignal): Promise<{ chunks: ContentChunk[]; sha256: string; size: number }> {
  const size = (await fs.stat(path)).size;
  const threaded = size >= THREAD_FROM ? sha256InThread(path) : undefined;
  // Awaited below; a failure before then must not go unhandled.
  threaded?.catch(() => undefined);
  const chunker = new ContentChunker();
  const whole = createHash('sha256');
  const chunks: ContentChunk[] = [];
  // The chunker keeps no piece: it hashes each as it goes.
  const read = await forEachPiece(
    path,
    (piece) => {
      if (!threaded) whole.update(piece);
      chunks.push(...chunker.update(piece));
    },
    signal,
  );
  chunks.push(...chunker.finish());
  return { chunks, sha256: threaded ? await threaded : whole.digest('hex'), size: read };
}
