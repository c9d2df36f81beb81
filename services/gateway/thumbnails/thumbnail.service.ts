import { notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import type { ResourceRepository } from '../../../shared/db/repositories/resource.repository';
import { ContentNotFoundError, type ContentStore } from '../../../shared/storage/content.store';
import type { ThumbnailRepository } from '../../../shared/thumbnails/thumbnail.repository';
import type { ThumbnailRequests } from '../../../shared/thumbnails/thumbnail.requests';
import { isLargeSize, isThumbnailSource, LARGEST_EAGER_SIZE, storedSizeFor, thumbnailKey } from '../../../shared/thumbnails/thumbnail.sizes';

/** A stored thumbnail's bytes (a few KiB to a few hundred) and the validator of its bytes. */
export interface FoundThumbnail {
  body: Buffer;
  /** The stored size served (the largest not above the one asked for). */
  size: number;
  /** Names the content's digest and the size: the same for every file with those bytes. */
  etag: string;
  /** A smaller image standing in for a size not made yet: not to be kept by the browser. */
  standIn: boolean;
}

/**
 * Finds a file's thumbnail for its owner; never decodes an image (the workers make them). Anything
 * missing is NOT_FOUND: a file that is not an image, a thumbnail not made yet, an unreadable image.
 * One that should exist and does not (its job was lost, or the sweep raced a new upload of the same
 * bytes) is enqueued again on the way out, so every thumbnail is eventually made. The sizes above 256
 * are made when first asked for: meanwhile the 256 answers, which is within the size asked for.
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
      const found = (at: number, standIn: boolean, body: Buffer) => ({ body, size: at, etag: `"${sha256}-${at}"`, standIn });
      const body = await this.read(thumbnailKey(sha256, stored));
      if (body) return found(stored, false, body);
      if (isLargeSize(stored)) {
        await this.requests?.request(sha256, storageKey, 'large');
        const smaller = await this.read(thumbnailKey(sha256, LARGEST_EAGER_SIZE));
        if (smaller) return found(LARGEST_EAGER_SIZE, true, smaller);
      }
    }
    await this.requests?.request(sha256, storageKey);
    throw notFound('no thumbnail yet');
  }

  /**
   * The whole image, or undefined when it is not stored. Made again, an image is written over its
   * key, so a store that pinned the previous bytes when opening (S3's ETag) finds them gone once:
   * the second opening reads the current ones.
   */
  private async read(key: string): Promise<Buffer | undefined> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const content = await this.store.open(key);
        const chunks: Buffer[] = [];
        for await (const chunk of await content.read()) chunks.push(chunk as Buffer);
        return Buffer.concat(chunks);
      } catch (err) {
        if (!(err instanceof ContentNotFoundError)) throw err;
      }
    }
    return undefined;
  }
}
