import { Readable } from 'node:stream';
import { AppError, invalid, isAppError, tooLarge } from '../../../shared/errors';
import type { ErrorBody } from '../../../shared/protocol';
import { BULK_MAX_FILES, type BulkDownloadHeader, type BulkUploadHeader, type BulkUploadResult } from '../../../shared/protocol/bulk';
import type { ContentStore } from '../../../shared/storage/content.store';
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
 * one that fails leaves nothing. The files of a request are staged one after another as their bytes
 * arrive and committed together: the owner's transaction is shared by the commits that meet.
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
    for (;;) {
      if (waiting.size >= MAX_COMMITS_WAITING) await Promise.race(waiting);
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
      const staged = await this.store.stage(Readable.from(reader.pieces(header.size)), { maxBytes: header.size });
      const result = this.commit(author, header, staged).then(
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

  /** The headers and bytes of each file in turn, each read as `GET /files/:id/content` would. */
  async *download(userId: string, ids: unknown): AsyncGenerator<Buffer> {
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > BULK_MAX_FILES || !ids.every((id) => typeof id === 'string')) {
      throw invalid(`ids must be a list of 1 to ${BULK_MAX_FILES} file ids`);
    }
    const frame = (header: BulkDownloadHeader) => {
      const json = Buffer.from(JSON.stringify(header));
      const length = Buffer.alloc(4);
      length.writeUInt32BE(json.length);
      return Buffer.concat([length, json]);
    };
    for (const id of ids as string[]) {
      let opened;
      try {
        const file = await this.files.get(userId, id);
        if (!file.storageKey) throw new AppError('NOT_FOUND', 'this file has no content');
        opened = await this.files.openContent(userId, file);
      } catch (err) {
        yield frame({ id, size: 0, error: errorOf(err).error });
        continue;
      }
      const { file, content } = opened;
      yield frame({ id, size: content.size, sha256: file.contentSha256!, rev: file.rev });
      // Once the header is out the bytes must follow: a read failure cuts the response.
      yield* (await content.read()) as AsyncIterable<Buffer>;
    }
    yield Buffer.alloc(4);
  }
}
