import { createHash, type Hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/** How many unfinished uploads keep a running hash; the least recently written is forgotten beyond it (read back at the end). */
const MAX_STATES = 10_000;

/**
 * The SHA-256 of each resumable upload, carried from one PATCH to the next while they arrive in
 * order on this gateway, so a finished upload's digest needs no second read of its bytes. An upload
 * whose chunks came out of order, or through another gateway, has no state: its bytes are read back.
 */
export class RunningHashes {
  private readonly states = new LRUCache<string, { hash: Hash; offset: number }>({ max: MAX_STATES });

  /** The hash to feed the bytes written at `offset`, or undefined when it cannot continue here. */
  take(id: string, offset: number): Hash | undefined {
    const state = this.states.get(id);
    this.states.delete(id);
    if (offset === 0) return createHash('sha256');
    return state?.offset === offset ? state.hash : undefined;
  }

  /** Keeps `hash`, covering the upload's bytes up to `offset`, for its next PATCH. */
  keep(id: string, hash: Hash, offset: number): void {
    this.states.set(id, { hash, offset });
  }

  /** The hex digest when the running hash covers all `size` bytes; undefined when they must be read. */
  finish(id: string, size: number): string | undefined {
    const state = this.states.get(id);
    this.states.delete(id);
    return state && state.offset === size ? state.hash.digest('hex') : undefined;
  }

  forget(id: string): void {
    this.states.delete(id);
  }
}
