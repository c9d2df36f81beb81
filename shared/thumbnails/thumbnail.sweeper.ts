import type { Logger } from '../logger';
import type { ContentStore } from '../storage/content.store';
import type { ThumbnailRepository } from './thumbnail.repository';
import { THUMBNAIL_SIZES, thumbnailKey } from './thumbnail.sizes';

const PAGE = 500;

/**
 * Removes the thumbnails of digests no file, trashed file or version has as content any more (run
 * by the workers' maintenance queue). Content leaves by many paths (replacement, purge, version
 * expiry, fsck); checking the digests afterwards covers them all, and two files with the same bytes
 * keep their shared thumbnails until the last one goes.
 *
 * Crash-safe in either order of events: the row is marked 'removing' before its images are removed
 * and dropped only after, so an interrupted removal is finished by the next run; a row a worker set
 * to 'making' or 'ready' meanwhile is kept (its images may then be missing, which the thumbnail
 * endpoint notices and enqueues again).
 */
export class ThumbnailSweeper {
  constructor(
    private readonly store: ContentStore,
    private readonly thumbnails: ThumbnailRepository,
    private readonly logger?: Logger,
  ) {}

  async sweep(): Promise<{ thumbnailsRemoved: number }> {
    let removed = 0;
    let after = '';
    for (;;) {
      const page = await this.thumbnails.page(after, PAGE);
      if (page.length === 0) break;
      after = page[page.length - 1].sha256;
      const stored = await this.thumbnails.stillStored(page.filter((r) => r.state !== 'removing').map((r) => r.sha256));
      for (const { sha256 } of page) {
        if (stored.has(sha256)) continue;
        if (await this.remove(sha256)) removed++;
      }
      if (page.length < PAGE) break;
    }
    return { thumbnailsRemoved: removed };
  }

  private async remove(sha256: string): Promise<boolean> {
    if (!(await this.thumbnails.markRemoving(sha256))) return false;
    try {
      for (const size of THUMBNAIL_SIZES) await this.store.remove(thumbnailKey(sha256, size));
    } catch (err) {
      // Left 'removing': the next run tries again.
      this.logger?.warn({ err, sha256 }, 'thumbnails could not be removed');
      return false;
    }
    await this.thumbnails.dropRemoved(sha256);
    return true;
  }
}
