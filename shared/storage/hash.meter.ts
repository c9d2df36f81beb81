import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { crc32 } from 'node:zlib';
import { tooLarge } from '../errors';

/**
 * Counts and hashes the bytes that pass; more than `maxBytes` fails the stream with FILE_TOO_LARGE.
 * Every driver stages through one, so the size and the SHA-256 of staged content mean the same
 * whatever the medium.
 */
export class HashMeter extends Transform {
  private readonly hash = createHash('sha256');
  /** Bytes that passed so far. */
  received = 0;
  /** CRC-32 of the bytes that passed so far (a ZIP of the content needs no pass over it then). */
  crc32 = 0;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null, chunk?: Buffer) => void): void {
    this.received += chunk.length;
    if (this.received > this.maxBytes) return done(tooLarge(this.maxBytes));
    // Hashed here, on the event loop, while libuv's threads write the previous chunks. A hashing
    // thread was measured too and was slower on two cores (docs/BENCHMARKS.md).
    this.hash.update(chunk);
    this.crc32 = crc32(chunk, this.crc32);
    done(null, chunk);
  }

  /** The SHA-256 of everything that passed, hex; call once, after the stream has finished. */
  digest(): string {
    return this.hash.digest('hex');
  }
}
