import type { Config } from '../../shared/config';
import type { Db } from '../../shared/db/knex';
import type { Logger } from '../../shared/logger';
import type { ContentStore } from '../../shared/storage/content.store';
import { ImageProcess } from '../../shared/thumbnails/image.process';
import { limitImageThreads } from '../../shared/thumbnails/thumbnail.maker';
import { BackgroundProcess } from './background.process';
import { consumeChunkLists } from './chunk-list.workers';
import { consumeThumbnails } from './thumbnail.workers';

export interface BackgroundWorkers {
  close(): Promise<void>;
}

/**
 * Consumes the queues of the background jobs, thumbnails and chunk lists. Where it is built, in a
 * process of its own whose every thread runs at nice 19 (background.child.ts), so that no part of a
 * job (queue, SQL, store, images, cutting) competes with the uploads and sync batches at their
 * priority. In this process otherwise: under ts-jest (the sources run, the child has no compiled
 * file), or when the caller passed its own store (`ownStore`), which a process of its own could not
 * use; images are then made in a process of their own at nice 19 where it is built (image.process.ts).
 */
export async function startBackground(config: Config, db: Db, logger: Logger, store: ContentStore, ownStore: boolean): Promise<BackgroundWorkers> {
  const child = ownStore ? undefined : BackgroundProcess.create(logger);
  if (child) {
    await child.start();
    return { close: () => child.close() };
  }
  limitImageThreads();
  const images = ImageProcess.create();
  const thumbnails = await consumeThumbnails(config, db, logger, store, images && ((source, sizes) => images.make(source, sizes)));
  const chunkLists = await consumeChunkLists(config, db, logger, store);
  return {
    close: async () => {
      await Promise.all([thumbnails.close(), chunkLists.close()]);
      await images?.close();
    },
  };
}
