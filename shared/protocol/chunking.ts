import { createHash, type Hash } from 'node:crypto';

/**
 * Content-defined chunking shared by the service and every client (docs/SYNC-CLIENT.md, "Changes
 * that move only what changed"): both sides must cut the same bytes at the same places, so that a
 * chunk list from one side can be matched against the other's by hash. It is FastCDC (Xia et al.,
 * USENIX ATC '16) with normalised chunking, level 2, on a 32-bit gear hash:
 * - no cut before MIN bytes; from MIN the hash runs, starting at 0: h = (h << 1) + GEAR[byte] (32 bits);
 * - below AVG bytes a cut needs the 19 top bits of h to be 0, from AVG on the 15 top bits;
 * - a chunk ends after the byte that satisfies its mask, or at MAX bytes, or at the end of the content.
 * GEAR[i] is the first 4 bytes (big-endian) of SHA-256 of the single byte i. Insertions and deletions
 * move only the cuts around them, so an edit costs about its own size and a chunk or two either side.
 */
export const CHUNKING = {
  algorithm: 'fastcdc-gear32-v1',
  minBytes: 32 * 1024,
  avgBytes: 128 * 1024,
  maxBytes: 512 * 1024,
} as const;

/**
 * Files from this size on travel as changes when they can, and the service makes their chunk lists
 * when they are written: below it, a whole transfer costs about what a chunk list and a local read do.
 */
export const DELTA_MIN_BYTES = 4 * 1024 * 1024;

/** One chunk of a content: where it is and the SHA-256 (hex) of its bytes. */
export interface ContentChunk {
  offset: number;
  length: number;
  sha256: string;
}

/** `GET /files/:id/chunks`: the chunk list of a file's current content. */
export interface ChunkList {
  fileId: string;
  rev: number;
  size: number;
  /** SHA-256 of the whole content, as its ETag. */
  sha256: string;
  chunking: { algorithm: string; minBytes: number; avgBytes: number; maxBytes: number };
  chunks: ContentChunk[];
}

const GEAR = new Int32Array(256);
for (let i = 0; i < 256; i++) GEAR[i] = createHash('sha256').update(Buffer.of(i)).digest().readInt32BE(0);

// Top bits of the hash: those depend on the most bytes of the window.
const MASK_SMALL = 0xffffe000 | 0; // 19 bits
const MASK_LARGE = 0xfffe0000 | 0; // 15 bits

/** The hash where the last `scan` stopped. */
let scanned = 0;

/**
 * Runs the gear hash from `h` over `bytes[i..end)`: the index just after the first byte at which the
 * hash's `mask` bits are all 0, or -1; the hash at that point in `scanned`. Unrolled by four: the
 * loop's own bookkeeping is then a quarter of what it is byte by byte, which V8 turns into about twice
 * the throughput (the delta bench reports it).
 */
function scan(bytes: Uint8Array, i: number, end: number, mask: number, h: number): number {
  const gear = GEAR;
  for (const end4 = end - 3; i < end4; i += 4) {
    h = ((h << 1) + gear[bytes[i]!]!) | 0;
    if ((h & mask) === 0) return ((scanned = h), i + 1);
    h = ((h << 1) + gear[bytes[i + 1]!]!) | 0;
    if ((h & mask) === 0) return ((scanned = h), i + 2);
    h = ((h << 1) + gear[bytes[i + 2]!]!) | 0;
    if ((h & mask) === 0) return ((scanned = h), i + 3);
    h = ((h << 1) + gear[bytes[i + 3]!]!) | 0;
    if ((h & mask) === 0) return ((scanned = h), i + 4);
  }
  for (; i < end; i++) {
    h = ((h << 1) + gear[bytes[i]!]!) | 0;
    if ((h & mask) === 0) return ((scanned = h), i + 1);
  }
  scanned = h;
  return -1;
}

/**
 * Cuts a stream of bytes into chunks as it is fed, whatever the sizes of the pieces it is fed in:
 * `update` returns the chunks completed by a piece, `finish` the last one.
 */
export class ContentChunker {
  private offset = 0;
  private length = 0;
  private hash = 0;
  private sha: Hash = createHash('sha256');

  update(piece: Uint8Array): ContentChunk[] {
    const done: ContentChunk[] = [];
    const { minBytes, avgBytes, maxBytes } = CHUNKING;
    let start = 0;
    let i = 0;
    const n = piece.length;
    while (i < n) {
      if (this.length < minBytes) {
        const skip = Math.min(minBytes - this.length, n - i);
        i += skip;
        this.length += skip;
        continue;
      }
      // Below the average length the stricter mask, from it the looser one, up to the largest length.
      const small = this.length < avgBytes;
      const end = Math.min(n, i + (small ? avgBytes : maxBytes) - this.length);
      const at = scan(piece, i, end, small ? MASK_SMALL : MASK_LARGE, this.hash);
      const stop = at < 0 ? end : at;
      this.hash = scanned;
      this.length += stop - i;
      i = stop;
      if (at >= 0 || this.length >= maxBytes) {
        this.sha.update(piece.subarray(start, i));
        start = i;
        done.push(this.close());
      }
    }
    if (start < n) this.sha.update(piece.subarray(start, n));
    return done;
  }

  /** The last chunk (none for empty content or when the content ended on a cut). */
  finish(): ContentChunk[] {
    return this.length > 0 ? [this.close()] : [];
  }

  private close(): ContentChunk {
    const chunk = { offset: this.offset, length: this.length, sha256: this.sha.digest('hex') };
    this.offset += this.length;
    this.length = 0;
    this.hash = 0;
    this.sha = createHash('sha256');
    return chunk;
  }
}

/** The chunks of bytes held whole in memory. */
export function chunksOf(bytes: Uint8Array): ContentChunk[] {
  const chunker = new ContentChunker();
  return [...chunker.update(bytes), ...chunker.finish()];
}

const PACKED_ENTRY = 36;

/** A chunk list in 36 bytes a chunk: 4 of length (big-endian), 32 of SHA-256; offsets follow from the lengths. */
export function packChunks(chunks: ContentChunk[]): Buffer {
  const out = Buffer.allocUnsafe(chunks.length * PACKED_ENTRY);
  chunks.forEach((c, i) => {
    out.writeUInt32BE(c.length, i * PACKED_ENTRY);
    out.write(c.sha256, i * PACKED_ENTRY + 4, 32, 'hex');
  });
  return out;
}

export function unpackChunks(packed: Buffer): ContentChunk[] {
  const chunks: ContentChunk[] = [];
  let offset = 0;
  for (let at = 0; at + PACKED_ENTRY <= packed.length; at += PACKED_ENTRY) {
    const length = packed.readUInt32BE(at);
    chunks.push({ offset, length, sha256: packed.toString('hex', at + 4, at + PACKED_ENTRY) });
    offset += length;
  }
  return chunks;
}

/** The media type of a delta body (`POST /files/:id/delta`). */
export const DELTA_MEDIA_TYPE = 'application/vnd.filesync.delta';

/**
 * Delta body records: one byte of kind, then big-endian unsigned 64-bit fields.
 * `L` count then count x 36 bytes (packChunks), optional and first: the new content's chunk list,
 * which the service checks instead of cutting the content itself;
 * `C` offset length: copy that range of the base content; `D` length bytes: these new bytes;
 * `E`: the end (required: a body cut short is refused).
 */
export const DELTA_RECORD = { list: 0x4c, copy: 0x43, data: 0x44, end: 0x45 } as const;
