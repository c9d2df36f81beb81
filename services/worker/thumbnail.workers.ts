import { Worker } from 'bullmq';
import type { Config } from '../../shared/config';
import type { Db } from '../../shared/db/knex';
import type { Logger } from '../../shared/logger';
import { THUMBNAIL_QUEUE, type ThumbnailJobData, type ThumbnailJobResult } from '../../shared/queue/thumbnail.contract';
import { bullPrefix, closingWith, connectRedis } from '../../shared/redis/redis.connection';
import type { ContentStore } from '../../shared/storage/content.store';
import { ThumbnailMaking } from '../../shared/thumbnails/thumbnail.making';
import { ThumbnailRepository } from '../../shared/thumbnails/thumbnail.repository';

export type MakeImages = ConstructorParameters<typeof ThumbnailMaking>[2];

/**
 * THUMBNAIL_CONCURRENCY jobs at once, each decoding on one libvips thread, so thumbnails take at most
 * that many cores from the sync batches beside them. `makeImages` makes the images (in this process
 * when undefined).
 */
export async function consumeThumbnails(
  config: Config,
  db: Db,
  logger: Logger,
  store: ContentStore,
  makeImages?: MakeImages,
): Promise<Worker<ThumbnailJobData, ThumbnailJobResult>> {
  const making = new ThumbnailMaking(store, new ThumbnailRepository(db), makeImages);
  const connection = connectRedis(config, 'blocking');
  const worker = closingWith(
    new Worker<ThumbnailJobData, ThumbnailJobResult>(
      THUMBNAIL_QUEUE,
      async (job) => {
        const started = Date.now();
        const result = await making.run(job.data);
        logger.debug({ jobId: job.id, ...result, ms: Date.now() - started }, 'thumbnail job done');
        return result;
      },
      { connection, prefix: bullPrefix(config, config.queuePrefix), concurrency: config.thumbnailConcurrency },
    ),
    connection,
  );
  // An unreadable image fails once (UnrecoverableError): news for the dashboard, not for the logs' errors.
  worker.on('failed', (job, err) => logger.info({ jobId: job?.id, err: err.message }, 'thumbnail job failed'));
  worker.on('error', (err) => logger.warn({ err: err.message }, 'thumbnail worker connection error'));
  await worker.waitUntilReady();
  return worker;
}
