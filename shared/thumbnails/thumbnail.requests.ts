import type { Queue } from 'bullmq';
import type { Logger } from '../logger';
import { MAKE_THUMBNAILS_JOB, THUMBNAIL_JOB_OPTIONS, thumbnailJobId, type ThumbnailJobData, type ThumbnailJobResult, type ThumbnailPart } from '../queue/thumbnail.contract';
import { isThumbnailSource } from './thumbnail.sizes';

/** A content just committed (shared/content/content.writer.ts), as the thumbnail queue needs it. */
export interface CommittedContent {
  storageKey: string;
  sha256: string;
  mimeType: string | null;
}

/**
 * Asks the workers for an image content's thumbnails. The job id is the digest's, so asking again
 * while a job is queued, running or failed adds nothing. Never waits on Redis in the caller's
 * request: a request that could not be enqueued is logged and made again when the thumbnail is
 * first asked for (the endpoint enqueues what it does not find).
 */
export class ThumbnailRequests {
  constructor(
    private readonly queue: Queue<ThumbnailJobData, ThumbnailJobResult>,
    private readonly logger?: Logger,
  ) {}

  /** For ContentWriter: after every commit; contents that are not images are ignored. */
  readonly committed = (content: CommittedContent): void => {
    if (isThumbnailSource(content.mimeType)) void this.request(content.sha256, content.storageKey);
  };

  async request(sha256: string, storageKey: string, part?: ThumbnailPart): Promise<void> {
    try {
      const data: ThumbnailJobData = part ? { sha256, storageKey, part } : { sha256, storageKey };
      await this.queue.add(MAKE_THUMBNAILS_JOB, data, { ...THUMBNAIL_JOB_OPTIONS, jobId: thumbnailJobId(sha256, part) });
    } catch (err) {
      this.logger?.warn({ err, sha256, part }, 'thumbnail job could not be enqueued');
    }
  }
}
