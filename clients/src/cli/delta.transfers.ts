import { createHash } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import { Readable } from 'node:stream';
import type { File } from '../../../shared/protocol';
import { CHUNKING, DELTA_MIN_BYTES, type ChunkList, type ContentChunk } from '../../../shared/protocol/chunking';
import { deltaBody, fetchChunkList, fetchRange, planDelta, uploadDelta } from '../sdk/delta';
import { AbortedError, ApiError } from '../sdk/errors';
import type { Journal } from './journal';
import { chunkFile, chunkFileAgainst } from './chunk.reuse';
import { sha256OfFile } from './file.pieces';
import type { Session } from './session';
import { FlushBehind } from './flush.behind';

/** Files from this size on travel as changes when they can (docs/SYNC-CLIENT.md). */
export const DELTA_THRESHOLD = DELTA_MIN_BYTES;

/** A delta that would move more than this share of the file goes whole: it would save little. */
const WORTHWHILE = 0.5;

/** Missing ranges nearer than this are fetched as one, so a scattered change costs few requests. */
const RANGE_GAP = 256 * 1024;

/** Bytes read from the local base at a time when assembling a download. */
const COPY_BUFFER = 4 * 1024 * 1024;

/** What a delta moved instead of the whole file, for the action line and the `status` totals. */
export interface DeltaNote {
  movedBytes: number;
  size: number;
}

export const describeDelta = (n: DeltaNote | undefined): string => (n ? ` (delta: ${n.movedBytes} of ${n.size} bytes moved, ${n.size - n.movedBytes} saved)` : '');

async function* fileRange(path: string, offset: number, length: number): AsyncGenerator<Uint8Array> {
  yield* createReadStream(path, { start: offset, end: offset + length - 1, highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>;
}

/** Failures after which a whole transfer may still succeed: anything but an abort or a refusal the whole transfer would get too. */
const worthRetryingWhole = (err: unknown) =>
  !(err instanceof AbortedError) && !(err instanceof ApiError && ['PRECONDITION_FAILED', 'QUOTA_EXCEEDED', 'RATE_LIMITED'].includes(err.code));

/**
 * Delta uploads and downloads of large files. Each method answers undefined when a delta cannot do
 * better than a whole transfer (a small file, no base, most bytes changed, a service without the
 * endpoints), and the caller then transfers the file whole.
 */
export class DeltaTransfers {
  constructor(
    private readonly session: Session,
    private readonly journal: Journal,
    private readonly signal: AbortSignal,
  ) {}

  /** Large files read this run, by path: what their bytes were when read. */
  private readonly read_ = new Map<string, { chunks: ContentChunk[]; sha256: string; size: number }>();

  /** Cuts a local file, against the kept chunk list of its base when there is one (only the changes are cut then). */
  private cut(full: string, baseSha256: string | undefined, hint?: ContentChunk[]) {
    const base = hint ?? (baseSha256 ? this.journal.chunkList(baseSha256) : undefined);
    return base?.length ? chunkFileAgainst(full, base) : chunkFile(full, this.signal);
  }

  /**
   * Reads a large file once for its SHA-256 and its chunks; a delta upload of the same bytes reuses
   * them. `sameStat`: its size and mtime are still the base's (hashed again only because they were
   * read too soon after the write to vouch for the bytes).
   */
  async read(full: string, base?: { id: string; sha256: string; sameStat: boolean }): Promise<string> {
    // The base's list (kept, else the service's while it holds the base) spares cutting the whole file;
    // it needs no trust in the base: only chunks whose SHA-256 still holds are taken from it.
    const hint = base ? await this.baseList(base.id, base.sha256).catch(() => undefined) : undefined;
    if (base?.sameStat && hint) {
      // Most likely unchanged: one SHA-256 of the whole proves it, and the base's list is then the file's.
      const whole = await sha256OfFile(full, this.signal);
      if (whole.sha256 === base.sha256) {
        this.read_.set(full, { chunks: hint, sha256: whole.sha256, size: whole.size });
        return whole.sha256;
      }
    }
    const got = await this.cut(full, undefined, hint);
    this.read_.set(full, got);
    return got.sha256;
  }

  /**
   * After a whole upload of `sha256` from `full`: the chunks read for it become the kept list of the
   * new base, so the next edit is cut against them without asking the service.
   */
  sentWhole(full: string, sha256: string): void {
    const got = this.read_.get(full);
    this.read_.delete(full);
    if (got?.sha256 === sha256) this.journal.putChunkList(sha256, got.chunks);
  }

  /**
   * After a whole download of a large file: its chunk list, which the service makes when the content
   * is written, is kept, so the next delta download copies from the local copy without reading it.
   * Best effort: without it, the next delta download cuts the local copy instead.
   */
  async receivedWhole(id: string, sha256: string, size: number): Promise<void> {
    if (size < DELTA_THRESHOLD || this.journal.chunkList(sha256)) return;
    try {
      const list = await this.session.authed(() => fetchChunkList(this.session.client, id, this.signal));
      if (list.sha256 === sha256 && list.chunking.algorithm === CHUNKING.algorithm) this.journal.putChunkList(sha256, list.chunks);
    } catch (err) {
      if (err instanceof AbortedError) throw err;
    }
  }

  /** The chunk list of the base `sha256`: kept by the journal, else the service's while it still holds that content. */
  private async baseList(id: string, sha256: string): Promise<ContentChunk[] | undefined> {
    const kept = this.journal.chunkList(sha256);
    if (kept) return kept;
    const list = await this.session.authed(() => fetchChunkList(this.session.client, id, this.signal));
    if (list.sha256 !== sha256 || list.chunking.algorithm !== CHUNKING.algorithm) return undefined;
    this.journal.putChunkList(sha256, list.chunks);
    return list.chunks;
  }

  async upload(input: { id: string; full: string; sha256: string; size: number; ifMatch: string }): Promise<{ file: File; note: DeltaNote } | undefined> {
    if (input.size < DELTA_THRESHOLD || !input.ifMatch) return undefined;
    try {
      const base = await this.baseList(input.id, input.ifMatch);
      if (!base) return undefined;
      const kept = this.read_.get(input.full);
      this.read_.delete(input.full);
      const local = kept?.sha256 === input.sha256 ? kept : await this.cut(input.full, undefined, base);
      // Changed again since the scan: the whole upload (and its digest check) deals with it. The body
      // below reads the file again; bytes changed meanwhile fail the service's digest check.
      if (local.sha256 !== input.sha256) return undefined;
      const plan = planDelta(base, local.chunks);
      if (plan.dataBytes > local.size * WORTHWHILE) return undefined;
      const file = await this.session.authed(() =>
        uploadDelta(this.session.client, input.id, {
          body: deltaBody(plan.steps, (offset, length) => fileRange(input.full, offset, length), local.chunks),
          ifMatch: input.ifMatch,
          sha256: input.sha256,
          signal: this.signal,
        }),
      );
      this.journal.putChunkList(input.sha256, local.chunks);
      const note = { movedBytes: plan.dataBytes, size: local.size };
      this.journal.countDelta(note.movedBytes, note.size - note.movedBytes);
      return { file, note };
    } catch (err) {
      if (worthRetryingWhole(err)) return undefined;
      throw err;
    }
  }

  /**
   * The file's current content assembled in `tmp` from the chunks the local base at `basePath` holds
   * and ranges fetched for the others. The caller checks the SHA-256 before renaming it into place.
   */
  async download(
    input: { id: string; size: number; basePath: string; baseSha256: string },
    tmp: string,
    progress: (done: number) => void,
  ): Promise<{ sha256: string; expected: string; note: DeltaNote } | undefined> {
    if (input.size < DELTA_THRESHOLD) return undefined;
    try {
      const list = await this.session.authed(() => fetchChunkList(this.session.client, input.id, this.signal));
      // Cut another way, the lists share no chunks: a whole download is cheaper.
      if (list.chunking.algorithm !== CHUNKING.algorithm) return undefined;
      // The local copy is trusted to hold its base (the scan found its size and mtime unchanged, or
      // hashed it this run); the SHA-256 of the result checks that trust.
      const read = this.read_.get(input.basePath);
      const base =
        this.journal.chunkList(input.baseSha256) ??
        (read?.sha256 === input.baseSha256 ? read.chunks : undefined) ??
        // Without a list, the local copy is cut against the new one: only around the changes.
        (await chunkFileAgainst(input.basePath, list.chunks)).chunks;
      const plan = planDelta(base, list.chunks);
      if (plan.dataBytes > list.size * WORTHWHILE) return undefined;
      const moved = await this.assemble(input.id, list, plan.steps, input.basePath, tmp, progress);
      // A local copy that no longer held its base: the whole download is what is left.
      if (moved.sha256 !== list.sha256) {
        await fs.rm(tmp, { force: true });
        return undefined;
      }
      this.journal.putChunkList(list.sha256, list.chunks);
      const note = { movedBytes: moved.fetched, size: list.size };
      this.journal.countDelta(note.movedBytes, note.size - note.movedBytes);
      return { sha256: moved.sha256, expected: list.sha256, note };
    } catch (err) {
      await fs.rm(tmp, { force: true });
      if (worthRetryingWhole(err) || (err instanceof ApiError && err.code === 'PRECONDITION_FAILED')) return undefined;
      throw err;
    }
  }

  private async assemble(
    id: string,
    list: ChunkList,
    steps: ReturnType<typeof planDelta>['steps'],
    basePath: string,
    tmp: string,
    progress: (done: number) => void,
  ): Promise<{ sha256: string; fetched: number }> {
    const whole = createHash('sha256');
    const out = await fs.open(tmp, 'wx', 0o600);
    const base = await fs.open(basePath, 'r');
    let written = 0;
    let fetched = 0;
    // One write in flight while the next bytes are read and hashed: the copy takes the disk's time or
    // the hash's, not both one after the other; flushed behind the writes as it grows.
    let writing: Promise<unknown> = Promise.resolve();
    const flushes = new FlushBehind(out);
    const write = async (piece: Uint8Array) => {
      whole.update(piece);
      await writing;
      const bytes = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
      writing = (async () => {
        for (let at = 0; at < bytes.length; ) at += (await out.write(bytes, at, bytes.length - at)).bytesWritten;
      })();
      written += piece.length;
      flushes.wrote(piece.length, writing);
      progress(written);
    };
    // Three buffers for copies from the local base: the next bytes are read into one while another is
    // hashed and the third is still being written.
    const buffers = [0, 1, 2].map(() => Buffer.allocUnsafe(COPY_BUFFER));
    let turn = 0;
    const readBase = (position: number, length: number) => {
      const buf = buffers[turn]!;
      turn = (turn + 1) % buffers.length;
      const read = base.read(buf, 0, Math.min(buf.length, length), position).then(({ bytesRead }) => buf.subarray(0, bytesRead));
      // Awaited in turn; a failure while another step is under way must not go unhandled.
      read.catch(() => undefined);
      return read;
    };
    try {
      for (let i = 0; i < steps.length; i++) {
        const s = steps[i]!;
        if (s.kind === 'copy') {
          let next = readBase(s.baseOffset, s.length);
          for (let done = 0; done < s.length; ) {
            const bytes = await next;
            if (bytes.length === 0) throw new Error('the local base is shorter than its chunk list');
            done += bytes.length;
            if (done < s.length) next = readBase(s.baseOffset + done, s.length - done);
            await write(bytes);
          }
          continue;
        }
        // Data steps close together are one range; the base bytes between them come along.
        let end = s.offset + s.length;
        while (steps[i + 1]?.kind === 'copy' && steps[i + 2]?.kind === 'data') {
          const next = steps[i + 2] as { offset: number; length: number };
          if (next.offset - end > RANGE_GAP) break;
          end = next.offset + next.length;
          i += 2;
        }
        const res = await this.session.authed(() => fetchRange(this.session.client, id, s.offset, end - 1, list.sha256, this.signal));
        let got = 0;
        for await (const piece of Readable.fromWeb(res.body as never) as AsyncIterable<Buffer>) {
          got += piece.length;
          await write(piece);
        }
        fetched += got;
        if (got !== end - s.offset) throw new Error('a range arrived short');
      }
      await writing;
      await flushes.finish();
    } finally {
      await writing.catch(() => undefined);
      await flushes.settled();
      await out.close();
      await base.close();
    }
    return { sha256: whole.digest('hex'), fetched };
  }
}
