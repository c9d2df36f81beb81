import { createHash, type Hash } from 'node:crypto';
import { invalid } from '../../../shared/errors';
import { CHUNKING, unpackChunks, type ContentChunk } from '../../../shared/protocol/chunking';

/** Bytes copied from the base: where the piece starts in it, where the copy ends, and the base's kept chunks by offset. */
export interface BaseCopy {
  at: number;
  end: number;
  chunks: ReadonlyMap<number, ContentChunk>;
}

/**
 * Checks a chunk list a client sent for the content it describes, as the bytes go by: each chunk's
 * SHA-256, and lengths that cover the content exactly. A list that passes is true of the bytes, so
 * another device that copies by its hashes copies the right bytes; cut points other than the
 * chunking's would only make later deltas of this content larger, never wrong. Checking costs one
 * SHA-256 of the content, instead of cutting it again; a chunk copied whole from the base, where the
 * base's own kept list (made by the service from its bytes, or checked like this one) has a chunk of
 * that length and SHA-256, is known already and is not hashed again.
 */
export class ChunkListVerifier {
  private index = 0;
  private filled = 0;
  /** The current chunk is a base chunk copied whole: its bytes need no hashing. */
  private known = false;
  private sha: Hash = createHash('sha256');
  readonly chunks: ContentChunk[];

  constructor(packed: Buffer) {
    this.chunks = unpackChunks(packed);
    this.chunks.forEach((c, i) => {
      const last = i === this.chunks.length - 1;
      if (c.length > CHUNKING.maxBytes || c.length === 0 || (!last && c.length < CHUNKING.minBytes)) {
        throw invalid(`chunk lengths are between ${CHUNKING.minBytes} and ${CHUNKING.maxBytes} bytes (the last one may be shorter)`);
      }
    });
  }

  /** The most chunks a list may hold for content of at most `maxBytes`. */
  static maxChunks(maxBytes: number): number {
    return Math.ceil(maxBytes / CHUNKING.minBytes) + 1;
  }

  update(piece: Buffer, copy?: BaseCopy): void {
    let at = 0;
    while (at < piece.length) {
      const chunk = this.chunks[this.index];
      if (!chunk) throw invalid('the content is longer than its chunk list');
      if (this.filled === 0 && copy) {
        const from = copy.at + at;
        const same = copy.chunks.get(from);
        this.known = same !== undefined && same.length === chunk.length && same.sha256 === chunk.sha256 && from + chunk.length - 1 <= copy.end;
      }
      const take = Math.min(chunk.length - this.filled, piece.length - at);
      if (!this.known) this.sha.update(piece.subarray(at, at + take));
      at += take;
      this.filled += take;
      if (this.filled === chunk.length) {
        if (this.known) this.known = false;
        else {
          if (this.sha.digest('hex') !== chunk.sha256) throw invalid('a chunk of the content does not match its SHA-256 in the chunk list', { chunk: this.index });
          this.sha = createHash('sha256');
        }
        this.index++;
        this.filled = 0;
      }
    }
  }

  finish(): ContentChunk[] {
    if (this.index !== this.chunks.length || this.filled !== 0) throw invalid('the content is shorter than its chunk list');
    return this.chunks;
  }
}
