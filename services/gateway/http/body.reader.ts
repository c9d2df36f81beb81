import { invalid } from '../../../shared/errors';

/** Reads exact byte counts from a stream of pieces. */
export class BodyReader {
  private pending: Buffer[] = [];
  private held = 0;
  private done = false;

  constructor(private readonly source: AsyncIterator<Buffer>) {}

  private async fill(): Promise<boolean> {
    if (this.done) return false;
    const next = await this.source.next();
    if (next.done) {
      this.done = true;
      return false;
    }
    const piece = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    this.pending.push(piece);
    this.held += piece.length;
    return true;
  }

  async exact(n: number): Promise<Buffer> {
    while (this.held < n) if (!(await this.fill())) throw invalid('the body ends inside a record');
    const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.pending = rest.length ? [rest] : [];
    this.held = rest.length;
    return out;
  }

  /** The next `n` bytes, in the pieces they arrive in. */
  async *pieces(n: number): AsyncGenerator<Buffer> {
    let left = n;
    while (left > 0) {
      if (this.held === 0 && !(await this.fill())) throw invalid('the body ends inside a record');
      const piece = this.pending.shift()!;
      const take = Math.min(left, piece.length);
      if (take < piece.length) this.pending.unshift(piece.subarray(take));
      this.held -= take;
      left -= take;
      yield piece.subarray(0, take);
    }
  }

  async atEnd(): Promise<boolean> {
    return this.held === 0 && !(await this.fill());
  }
}
