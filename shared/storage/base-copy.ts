import type { Readable } from 'node:stream';
import type { ByteRange, ContentStore, StageOptions, StagedContent } from './content.store';

/**
 * Staging of new content made of ranges of a stored content (the base) and new bytes, on a store
 * that can copy stored bytes inside itself (S3's UploadPartCopy): long ranges of the base are
 * copied there rather than written again. The source still carries every byte of the new content,
 * copied ranges included, so the size and SHA-256 of the staged content are those of the bytes
 * that went by, as with `stage`.
 */
export interface BaseCopyStaging {
  /**
   * Tells that the bytes of the source from `position` (in the new content) are bytes `range` of
   * the base; called before those bytes reach the source, in the order of the content.
   */
  copying(position: number, range: ByteRange): void;
  /** As ContentStore.stage: the staged content, or a failure that leaves nothing behind. */
  stage(source: Readable): Promise<StagedContent>;
}

/** A store that can stage content with copies of a stored content's ranges. */
export interface BaseCopies {
  /** A staging of new content copying from the content of `baseKey`; ContentNotFoundError once copying finds it gone. */
  stageFromBase(baseKey: string, options: StageOptions): BaseCopyStaging;
}

export const copiesFromBase = (store: ContentStore): store is ContentStore & BaseCopies => typeof (store as Partial<BaseCopies>).stageFromBase === 'function';
