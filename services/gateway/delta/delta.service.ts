import { invalid } from '../../../shared/errors';
import type { Logger } from '../../../shared/logger';
import type { ResourceRecord } from '../../../shared/db/repositories/resource.record';
import { ContentNotFoundError, type ContentStore } from '../../../shared/storage/content.store';
import type { ContentChunk } from '../../../shared/protocol/chunking';
import type { ContentService } from '../content/content.service';
import type { ChunkListsService } from './chunk-lists.service';
import { assembleDelta, type AssemblyReport, type DeltaBase } from './delta.assembly';
import { stageDelta } from './delta.staging';

export interface DeltaInput {
  userId: string;
  deviceId: string;
  fileId: string;
  /** The delta body (docs/SYNC-CLIENT.md, "Delta uploads"). */
  body: AsyncIterable<Buffer>;
  /** Must name the base content (its quoted SHA-256). */
  ifMatch?: string;
  /** SHA-256 (hex) of the new content as a whole, from Repr-Digest. */
  expectedSha256?: string;
  declaredType?: string;
}

export interface DeltaResult {
  file: ResourceRecord;
  copiedBytes: number;
  literalBytes: number;
}

/**
 * `POST /files/:id/delta`: new content sent as ranges of the current content plus new bytes. The
 * content is assembled in the store's staging, then committed by ContentService.replaceContent, the
 * path of `PUT /files/:id/content`: the same If-Match check under the owner's lock (412 with the
 * current rev and SHA-256), the declared SHA-256 checked before the commit, quota, a version kept,
 * the change feed with the device, and the staged bytes removed on any failure.
 */
export class DeltaService {
  constructor(
    private readonly store: ContentStore,
    private readonly content: ContentService,
    private readonly chunkLists: ChunkListsService,
    private readonly maxUploadBytes: number,
    private readonly logger?: Logger,
  ) {}

  async apply(input: DeltaInput): Promise<DeltaResult> {
    if (input.ifMatch === undefined) throw invalid('a delta needs If-Match with the SHA-256 of its base content');
    if (input.expectedSha256 === undefined) throw invalid('a delta needs Repr-Digest with the SHA-256 of the new content');
    const conditions = { ifMatch: input.ifMatch };
    const file = await this.content.checkBeforeUpload(input.userId, input.fileId, conditions);
    const report: AssemblyReport = { chunks: [], copiedBytes: 0, literalBytes: 0 };
    const assemble = (base: DeltaBase) => assembleDelta(input.body, base, report, this.maxUploadBytes);
    const baseChunks = file.storageKey ? await this.chunkLists.kept(file.storageKey) : undefined;
    const staged = await stageDelta(this.store, file.storageKey, this.baseOf(file, baseChunks), assemble, this.maxUploadBytes).catch((err: unknown) => this.baseGone(file, err));
    const record = await this.content.replaceContent({
      userId: input.userId,
      deviceId: input.deviceId,
      fileId: input.fileId,
      staged,
      declaredType: input.declaredType,
      expectedSha256: input.expectedSha256,
      listed: true,
      ...conditions,
    });
    await this.chunkLists.keep({ storageKey: record.storageKey!, sha256: record.contentSha256!, size: record.sizeBytes, chunks: report.chunks });
    this.logger?.debug({ fileId: record.id, copiedBytes: report.copiedBytes, literalBytes: report.literalBytes }, 'delta applied');
    return { file: record, copiedBytes: report.copiedBytes, literalBytes: report.literalBytes };
  }

  /**
   * The base as it was when the precondition was checked. Content keys are never reused, so its key
   * names those bytes for as long as they exist; if they were replaced and removed meanwhile, the
   * commit's own If-Match check is what answers (412), so the read failure surfaces as that.
   */
  private baseOf(file: ResourceRecord, chunks: ContentChunk[] | undefined): DeltaBase {
    const key = file.storageKey;
    return {
      size: key ? file.sizeBytes : 0,
      chunks,
      read: async (range) => {
        try {
          const handle = await this.store.open(key!);
          return await handle.read(range);
        } catch (err) {
          return this.baseGone(file, err);
        }
      },
    };
  }

  /** A failure that found the base gone (read, or copied in the store) answers as the commit would: 412 when it was replaced. */
  private async baseGone(file: ResourceRecord, err: unknown): Promise<never> {
    if (err instanceof ContentNotFoundError) {
      await this.content.checkBeforeUpload(file.userId, file.id, { ifMatch: `"${file.contentSha256}"`, ifNoneMatch: undefined });
    }
    throw err;
  }
}
