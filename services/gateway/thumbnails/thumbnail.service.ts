import { notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import type { ResourceRepository } from '../../../shared/db/repositories/resource.repository';
import { ContentNotFoundError, type ContentHandle, type ContentStore } from '../../../shared/storage/content.store';
import type { ThumbnailRepository } from '../../../shared/thumbnails/thumbnail.repository';
import type { ThumbnailRequests } from '../../../shared/thumbnails/thumbnail.requests';
import { isThumbnailSource, storedSizeFor, thumbnailKey } from '../../../shared/thumbnails/thumbnail.sizes';

/** A stored thumbnail, open for reading, and the validator of its bytes. */
export interface FoundThumbnail {
  content: ContentHandle;
  /** The stored size served (the largest not above the one asked for). */
  size: number;
  /** Names the content's digest and the size: the same for every file with those bytes. */
  etag: string;
}

/**
 * Finds a file's thumbnail for its owner; never decodes an image (the workers make them). Anything
 * missing is NOT_FOUND: a file that is not an image, a thumbnail not made yet, an unreadable image.
 * One that should exist and does not (its job was lost, or the sweep raced a new upload of the same
 * bytes) is enqueued again on the way out, so every thumbnail is eventually made.
 */
export class ThumbnailService {
  constructor(
    private readonly resources: ResourceRepository,
    private readonly thumbnails: ThumbnailRepository,
    private readonly store: ContentStore,
    private readonly requests?: ThumbnailRequests,
  ) {}

  async find(userId: string, fileId: string, size: number): Promise<FoundThumbnail> {
    const file = isId(fileId) ? await this.resources.findActive(userId, fileId, 'file') : undefined;
    if (!file) throw notFound('no such file');
    const { contentSha256: sha256, storageKey } = file;
    if (!sha256 || !storageKey || !isThumbnailSource(file.mimeType)) throw notFound('this file has no thumbnail');
    const state = await this.thumbnails.state(sha256);
    if (state === 'unreadable') throw notFound('this image cannot be read');
    const stored = storedSizeFor(size);
    if (state === 'ready') {
      try {
        const content = await this.store.open(thumbnailKey(sha256, stored));
        return { content, size: stored, etag: `"${sha256}-${stored}"` };
      } catch (err) {
        if (!(err instanceof ContentNotFoundError)) throw err;
      }
    }
    await this.requests?.request(sha256, storageKey);
    throw notFound('no thumbnail yet');
  }
}
