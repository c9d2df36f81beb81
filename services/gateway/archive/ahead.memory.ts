/*
 * The memory of an archive's reads ahead: slabs the local driver reads into, and the bytes held.
 */

/** A slab's size: a file up to this size is read whole as soon as it is listed, a larger one a slab at a time. */
export const CHUNK = 1024 * 1024;
/** Slabs kept for the next archive once their bytes have left. */
const KEPT_SLABS = 8;

const keptSlabs: Buffer[] = [];

export interface Slab {
  buf: Buffer;
  used: number;
  /** Pieces cut from it not yet released, and whether new ones are still cut from it. */
  refs: number;
  retired: boolean;
}

/**
 * Read buffers (over shared memory, so a store's reading thread can fill them) cut into pieces one after another, as the local driver's downloads reuse theirs: with
 * a fresh buffer per file, the external memory they add starts full collections of the gateway's
 * heap. A slab goes back to the pool only once every piece cut from it was released, that is, written.
 */
export class Slabs {
  private current: Slab | undefined;

  cut(size: number): { bytes: Buffer; slab: Slab } {
    let slab = this.current;
    if (!slab || slab.used + size > slab.buf.length) {
      if (slab) this.retire(slab);
      slab = this.current = { buf: keptSlabs.pop() ?? Buffer.from(new SharedArrayBuffer(CHUNK)), used: 0, refs: 0, retired: false };
    }
    const bytes = slab.buf.subarray(slab.used, slab.used + size);
    slab.used += size;
    slab.refs++;
    return { bytes, slab };
  }

  release(slab: Slab): void {
    if (--slab.refs === 0 && slab.retired && keptSlabs.length < KEPT_SLABS) keptSlabs.push(slab.buf);
  }

  /** At the end of an archive written whole: the last slab goes back once its pieces are written. */
  close(): void {
    if (this.current) this.retire(this.current);
    this.current = undefined;
  }

  private retire(slab: Slab): void {
    slab.retired = true;
    slab.refs++;
    this.release(slab);
  }
}

/** Bytes that may be held, handed out in the order asked for (so the writer's next bytes are never starved by later files). */
export class Budget {
  private readonly waiting: { n: number; go: () => void }[] = [];

  constructor(private free: number) {}

  take(n: number): Promise<void> | undefined {
    if (this.waiting.length === 0 && this.free >= n) {
      this.free -= n;
      return undefined;
    }
    return new Promise((go) => this.waiting.push({ n, go }));
  }

  give(n: number): void {
    this.free += n;
    while (this.waiting.length > 0 && this.free >= this.waiting[0]!.n) {
      const next = this.waiting.shift()!;
      this.free -= next.n;
      next.go();
    }
  }

  /** Lets every waiter go: the archive has failed, and they look at that first. */
  abort(): void {
    for (const w of this.waiting.splice(0)) w.go();
  }
}

