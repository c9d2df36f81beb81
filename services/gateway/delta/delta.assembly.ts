import type { Readable } from 'node:stream';
import { invalid } from '../../../shared/errors';
import { ContentChunker, DELTA_RECORD, type ContentChunk } from '../../../shared/protocol/chunking';
import type { ByteRange } from '../../../shared/storage/content.store';
import { BodyReader } from '../http/body.reader';
import { ChunkListVerifier, type BaseCopy } from './chunk-list.verifier';

/** The base content a delta copies from: its size and a way to read a range of it. */
export interface DeltaBase {
  size: number;
  /** The bytes `range` of the base, which become the new content's bytes from `position` on. */
  read(range: ByteRange, position: number): Promise<Readable>;
  /** The base's kept chunk list, when there is one: chunks of a client's list copied whole from it are not hashed again. */
  chunks?: ContentChunk[];
}

/** Copies after merging adjacent ones: each is one read of the base, so their number is bounded. */
export const MAX_COPIES = 10_000;

function uint64(buf: Buffer, at: number): number {
  const value = buf.readBigUInt64BE(at);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid('a delta record field is out of range');
  return Number(value);
}

/** What an assembly found besides the bytes: the new content's chunk list and how much came from the base. */
export interface AssemblyReport {
  chunks: ContentChunk[];
  copiedBytes: number;
  literalBytes: number;
}

/**
 * The new content a delta body describes (docs/SYNC-CLIENT.md, "Delta uploads"), as a stream of
 * pieces: base ranges read through the store, new bytes passed through as they arrive. A malformed
 * record or a copy outside the base is a 400, thrown from the stream, so the staging that reads it
 * fails and keeps nothing. The pieces are also cut into chunks, so the new content's chunk list is
 * known once its bytes are.
 */
export async function* assembleDelta(body: AsyncIterable<Buffer>, base: DeltaBase, report: AssemblyReport, maxBytes: number): AsyncGenerator<Buffer> {
  const reader = new BodyReader(body[Symbol.asyncIterator]());
  const chunker = new ContentChunker();
  let verifier: ChunkListVerifier | undefined;
  let copies = 0;
  let pending: ByteRange | undefined;
  let emitted = 0;
  const baseChunks = new Map((base.chunks ?? []).map((c) => [c.offset, c]));
  const emit = function* (piece: Buffer, copy?: BaseCopy) {
    emitted += piece.length;
    if (verifier) verifier.update(piece, copy);
    else report.chunks.push(...chunker.update(piece));
    yield piece;
  };
  let kind = (await reader.exact(1))[0];
  if (kind === DELTA_RECORD.list) {
    const count = uint64(await reader.exact(8), 0);
    if (count > ChunkListVerifier.maxChunks(maxBytes)) throw invalid('the chunk list is longer than any content this service takes');
    verifier = new ChunkListVerifier(await reader.exact(count * 36));
    kind = (await reader.exact(1))[0];
  }
  const flushCopy = async function* () {
    if (!pending) return;
    const range = pending;
    pending = undefined;
    if (++copies > MAX_COPIES) throw invalid(`a delta may copy at most ${MAX_COPIES} separate ranges of the base`);
    report.copiedBytes += range.end - range.start + 1;
    const stream = await base.read(range, emitted);
    let at = range.start;
    for await (const piece of stream as AsyncIterable<Buffer>) {
      yield* emit(piece, baseChunks.size ? { at, end: range.end, chunks: baseChunks } : undefined);
      at += piece.length;
    }
  };
  for (; ; kind = (await reader.exact(1))[0]) {
    if (kind === DELTA_RECORD.end) break;
    if (kind === DELTA_RECORD.copy) {
      const fields = await reader.exact(16);
      const offset = uint64(fields, 0);
      const length = uint64(fields, 8);
      if (length === 0) continue;
      if (offset + length > base.size) throw invalid('a copy reaches past the end of the base content', { baseSize: base.size, offset, length });
      if (pending && pending.end + 1 === offset) {
        pending.end += length;
      } else {
        yield* flushCopy();
        pending = { start: offset, end: offset + length - 1 };
      }
    } else if (kind === DELTA_RECORD.data) {
      const length = uint64(await reader.exact(8), 0);
      yield* flushCopy();
      report.literalBytes += length;
      for await (const piece of reader.pieces(length)) yield* emit(piece);
    } else {
      throw invalid('unknown delta record kind');
    }
  }
  yield* flushCopy();
  if (!(await reader.atEnd())) throw invalid('the delta body goes on after its end record');
  report.chunks.push(...(verifier ? verifier.finish() : chunker.finish()));
}
