import { Readable } from 'node:stream';
import { AppError, invalid, isAppError, notFound, tooLarge } from '../../../shared/errors';
import type { ErrorBody } from '../../../shared/protocol';
import { BULK_MAX_FILES, type BulkDownloadHeader, type BulkUploadHeader, type BulkUploadResult } from '../../../shared/protocol/bulk';
import type { ContentHandle, ContentStore } from '../../../shared/storage/content.store';
import type { ResourceRecord } from '../../../shared/db/repositories/resource.record';
import type { ContentService } from '../content/content.service';
import { sha256FromHexField } from '../content/digest';
import { toFileView } from '../files/files.presenter';
import type { FilesService } from '../files/files.service';
import { BodyReader } from '../http/body.reader';

const MAX_HEADER = 64 * 1024;
/**
 * Files of one request waiting for their commit. Commits share the owner's transactions, whose queue
 * refuses a user's writes beyond a bound (shared/db/group.commit.ts); past this many, the request
 * reads no further until one is done, so two requests of 1000 files at once stay within it.
 */
const MAX_COMMITS_WAITING = 64;
/** Files up to this size are read whole from the request before they are staged (stageBytes). */
const WHOLE_BYTES = 256 * 1024;
/**
 * Small files of one request being staged at once (at most this many x WHOLE_BYTES held): the next
 * frames are read while earlier files are written and flushed, so the files reach their commits
 * faster than one transaction takes and meet in fewer, larger ones.
 */
const STAGING_AT_ONCE = 8;

function errorOf(err: unknown): { status: number; error: ErrorBody } {
  const app = isAppError(err) ? err : new AppError('INTERNAL', 'the file could not be stored');
  return { status: app.status, error: app.toBody() };
}

function parseHeader(bytes: Buffer): BulkUploadHeader {
  let header: unknown;
  try {
    header = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw invalid('a bulk file header is not JSON');
  }
  const h = header as BulkUploadHeader;
  if (typeof h !== 'object' || h === null || !Number.isSafeInteger(h.size) || h.size < 0) throw invalid('a bulk file header needs a size');
  return h;
}

/**
 * Many files in one request (`POST /files/bulk`) and many files' content in one response
 * (`POST /files/bulk/content`). Each file goes through the path of its single counterpart
 * (FilesService.upload as `POST /files`, ContentService.replaceContent as `PUT content`, the same
 * reads as `GET content`), so names, digests, quota, versions and the change feed hold per file, and
 * one that fails leaves nothing. The files of a request are staged as their bytes arrive (small ones
 * several at once), asked to commit in the request's order, and committed together: the owner's
 * transaction is shared by the commits that meet.
 */
export class BulkService {
  constructor(
    private readonly store: ContentStore,
    private readonly files: FilesService,
    private readonly content: ContentService,
    private readonly maxUploadBytes: number,
  ) {}

  async upload(author: { userId: string; deviceId: string }, body: AsyncIterable<Buffer>): Promise<BulkUploadResult[]> {
    const reader = new BodyReader(body[Symbol.asyncIterator]());
    const results: Promise<BulkUploadResult>[] = [];
    try {
      await this.receive(author, reader, results);
    } catch (err) {
      // The files before a broken frame are committed or refused each on its own: the 400 says which.
      const done = await Promise.all(results);
      if (isAppError(err) && err.code === 'INVALID_REQUEST') throw invalid(err.message, { results: done });
      throw err;
    }
    return Promise.all(results);
  }

  private async receive(author: { userId: string; deviceId: string }, reader: BodyReader, results: Promise<BulkUploadResult>[]): Promise<void> {
    const waiting = new Set<Promise<unknown>>();
    const staging = new Set<Promise<unknown>>();
    // Each file's commit is asked for after the one before it: files reach the owner's queue in the request's order.
    let asked: Promise<void> = Promise.resolve();
    for (;;) {
      if (waiting.size >= MAX_COMMITS_WAITING) await Promise.race(waiting);
      if (staging.size >= STAGING_AT_ONCE) await Promise.race(staging);
      const length = (await reader.exact(4)).readUInt32BE(0);
      if (length === 0) break;
      if (length > MAX_HEADER) throw invalid(`a bulk file header is at most ${MAX_HEADER} bytes`);
      if (results.length >= BULK_MAX_FILES) throw invalid(`a bulk upload holds at most ${BULK_MAX_FILES} files`);
      const header = parseHeader(await reader.exact(length));
      if (header.size > this.maxUploadBytes) {
        for await (const _ of reader.pieces(header.size)) void _;
        results.push(Promise.resolve(errorOf(tooLarge(this.maxUploadBytes))));
        continue;
      }
      // A small file's bytes are taken whole and written in one call (a stream per file cost more than
      // its write), while the next frames are read; a larger one streams from the body, so in turn.
      let staged: Promise<Awaited<ReturnType<ContentStore['stage']>>>;
      if (this.store.stageBytes && header.size <= WHOLE_BYTES) {
        staged = this.store.stageBytes(await reader.exact(header.size), { maxBytes: header.size });
        const written = staged.then(
          () => void staging.delete(written),
          () => void staging.delete(written),
        );
        staging.add(written);
      } else {
        staged = Promise.resolve(await this.store.stage(Readable.from(reader.pieces(header.size)), { maxBytes: header.size }));
      }
      const previous = asked;
      let called = () => {};
      asked = new Promise<void>((resolve) => (called = resolve));
      const committing = staged.then(
        async (bytes) => {
          await previous;
          const commit = this.commit(author, header, bytes);
          called();
          return commit;
        },
        async (err: unknown) => {
          await previous;
          called();
          throw err;
        },
      );
      const result = committing.then(
        (file): BulkUploadResult => ({ status: header.fileId ? 200 : 201, file: toFileView(file) }),
        (err: unknown) => errorOf(err),
      );
      const settled = result.then(() => void waiting.delete(settled));
      waiting.add(settled);
      results.push(result);
    }
    if (!(await reader.atEnd())) throw invalid('the bulk body goes on after its end');
  }

  private async commit(author: { userId: string; deviceId: string }, h: BulkUploadHeader, staged: Awaited<ReturnType<ContentStore['stage']>>) {
    let expectedSha256: string | undefined;
    try {
      expectedSha256 = sha256FromHexField(h.sha256);
    } catch (err) {
      await this.store.discard(staged);
      throw err;
    }
    if (h.fileId !== undefined) {
      return this.content.replaceContent({
        ...author,
        fileId: String(h.fileId),
        staged,
        expectedSha256,
        ifMatch: h.ifMatch === undefined ? undefined : `"${String(h.ifMatch)}"`,
        ifNoneMatch: h.ifNoneMatch === undefined ? undefined : String(h.ifNoneMatch),
      });
    }
    const text = (v: unknown) => (v === undefined ? undefined : String(v));
    return this.files.upload({
      ...author,
      staged,
      declaredName: text(h.name) ?? '',
      declaredType: undefined,
      fields: { id: text(h.id), folderId: text(h.folderId), name: text(h.name) },
      expectedSha256,
    });
  }

  /**
   * The headers and bytes of each file in turn, each read as `GET /files/:id/content` would. The
   * files' rows are read in one statement, and the next files are opened and (when small) read whole
   * while the ones before them are sent.
   */
  async *download(userId: string, ids: unknown): AsyncGenerator<Buffer> {
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > BULK_MAX_FILES || !ids.every((id) => typeof id === 'string')) {
      throw invalid(`ids must be a list of 1 to ${BULK_MAX_FILES} file ids`);
    }
    const list = ids as string[];
    const known = await this.files.getMany(userId, list);
    const window: Promise<Prepared>[] = [];
    let next = 0;
    const fill = () => {
      while (window.length < READ_AHEAD && next < list.length) window.push(this.prepare(userId, list[next++]!, known));
    };
    let unread: ContentHandle | undefined;
    try {
      fill();
      while (window.length > 0) {
        const prepared = await window.shift()!;
        unread = prepared.stream;
        fill();
        for (const piece of prepared.pieces) yield piece;
        if (!prepared.stream) continue;
        // The stream owns the handle from here. Once the header is out the bytes must follow: a read failure cuts the response.
        unread = undefined;
        yield* (await prepared.stream.read()) as AsyncIterable<Buffer>;
      }
      yield Buffer.alloc(4);
    } finally {
      // A response cut short: what was opened ahead is released.
      await unread?.close().catch(() => undefined);
      for (const rest of window.splice(0)) void rest.then((p) => p.stream?.close()).catch(() => undefined);
    }
  }

  /** One file's frame: its header and bytes read whole, its header and an open handle to stream, or its error. */
  private async prepare(userId: string, id: string, known: Map<string, ResourceRecord>): Promise<Prepared> {
    let opened;
    try {
      const found = known.get(id);
      if (!found) throw notFound('no such file');
      if (!found.storageKey) throw new AppError('NOT_FOUND', 'this file has no content');
      opened = await this.files.openContent(userId, found);
    } catch (err) {
      return { pieces: [frame({ id, size: 0, error: errorOf(err).error })] };
    }
    const { file, content } = opened;
    const header = frame({ id, size: content.size, sha256: file.contentSha256!, rev: file.rev });
    if (!content.readInto || content.size > WHOLE_READ_MAX) return { pieces: [header], stream: content };
    let bytes: Buffer;
    try {
      bytes = await readAll(content);
    } catch (err) {
      return { pieces: [frame({ id, size: 0, error: errorOf(err).error })] };
    }
    return { pieces: bytes.length ? [header, bytes] : [header] };
  }
}

/** Files opened and read ahead of the one being sent. */
const READ_AHEAD = 8;
/** Content up to this size is read whole into a buffer of its size, not through a stream's 1 MiB reads. */
const WHOLE_READ_MAX = 256 * 1024;

interface Prepared {
  pieces: Buffer[];
  stream?: ContentHandle;
}

function frame(header: BulkDownloadHeader): Buffer {
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(json.length);
  return Buffer.concat([length, json]);
}

async function readAll(content: ContentHandle): Promise<Buffer> {
  const bytes = Buffer.allocUnsafe(content.size);
  try {
    for (let at = 0; at < bytes.length; ) {
      const n = await content.readInto!(bytes.subarray(at), at);
      if (n === 0) throw new Error('the content ended before its size');
      at += n;
    }
  } finally {
    await content.close();
  }
  return bytes;
}
