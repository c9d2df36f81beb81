import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { crc32 } from 'node:zlib';
import { tooLarge } from '../errors';

/**
 * Content up to this size has its CRC-32 taken as it is staged: the files an archive reads whole
 * (services/gateway/archive/ahead.memory.ts, CHUNK). A larger upload stops taking it after this many
 * bytes, so it costs at most this much CRC work.
 */
export const CRC32_MAX_BYTES = 1024 * 1024;

/**
 * Counts and hashes the bytes that pass; more than `maxBytes` fails the stream with FILE_TOO_LARGE.
 * Every driver stages through one, so the size and the SHA-256 of staged content mean the same
 * whatever the medium.
 */
export class HashMeter extends Transform {
  private readonly hash = createHash('sha256');
  /** Bytes that passed so far. */
  received = 0;
  private crc = 0;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null, chunk?: Buffer) => void): void {
    this.received += chunk.length;
    if (this.received > this.maxBytes) return done(tooLarge(this.maxBytes));
    // Hashed here, on the event loop, while libuv's threads write the previous chunks. A hashing
    // thread was measured too and was slower on two cores (docs/BENCHMARKS.md).
    this.hash.update(chunk);
    if (this.received <= CRC32_MAX_BYTES) this.crc = crc32(chunk, this.crc);
    done(null, chunk);
  }

  /**
   * The CRC-32 of everything that passed, for content up to CRC32_MAX_BYTES (a ZIP of it then needs
   * no pass over its bytes); undefined beyond: archives stream larger files, and the pass would add a
   * tenth to the hashing of every large upload.
   */
  crc32(): number | undefined {
    return this.received <= CRC32_MAX_BYTES ? this.crc : undefined;
  }

  /** The SHA-256 of everything that passed, hex; call once, after the stream has finished. */
  digest(): string {
    return this.hash.digest('hex');
  }
}

/** What a HashMeter reports, for bytes already whole in memory: size, SHA-256 (hex) and CRC-32 within CRC32_MAX_BYTES. */
export function measureBytes(bytes: Buffer, maxBytes: number): { size: number; sha256: string; crc32: number | undefined } {
  if (bytes.length > maxBytes) throw tooLarge(maxBytes);
  return {
    size: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    crc32: bytes.length <= CRC32_MAX_BYTES ? crc32(bytes) : undefined,
  };
}
