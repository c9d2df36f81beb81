import type { RequestHandler, Router } from 'express';
import type { Config } from '../../../shared/config';
import type { Logger } from '../../../shared/logger';
import type { UploadReservations } from '../../../shared/quota/upload.reservations';
import type { ContentStore } from '../../../shared/storage/content.store';
import { OpenUploads } from './open.uploads';
import { RedisLocker } from './redis.locker';
import { ownerOf } from './upload.metadata';
import { buildTusServer } from './tus.server';
import { uploadRoutes } from './uploads.routes';
import { UploadsService, type ContentTarget, type FileTarget } from './uploads.service';

export interface UploadsModule {
  router: Router;
  service: UploadsService;
  ready(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Resumable uploads: the tus server on the content store's resumable uploads, locked through
 * Redis. Their expiry is a maintenance task of the workers (services/worker/maintenance.workers.ts).
 */
export function createUploads(deps: {
  config: Config;
  store: ContentStore;
  files: FileTarget;
  content: ContentTarget;
  reservations: UploadReservations;
  authenticated: RequestHandler;
  logger: Logger;
}): UploadsModule {
  const { config, logger } = deps;
  const open = new OpenUploads(
    { redis: config, prefix: config.queuePrefix, max: config.maxOpenUploads, expiryMs: config.uploadExpiryMs },
    logger,
  );
  // An upload that leaves (completed, terminated) or whose creation failed ends its reservation in
  // the quota and frees its open place.
  const store = deps.store.resumable.dataStore(config.uploadExpiryMs, async (id, metadata) => {
    await deps.reservations.release(id);
    const owner = ownerOf(metadata);
    if (owner) await open.release(owner.userId, id);
  });
  const locker = new RedisLocker({ redis: config, prefix: config.queuePrefix }, logger);
  const service = new UploadsService(store, deps.files, deps.content, open, deps.reservations);
  const tus = buildTusServer({ store, locker, uploads: service, maxUploadBytes: config.maxUploadBytes, logger });
  return {
    router: uploadRoutes(tus, deps.authenticated),
    service,
    ready: () => locker.ready(),
    close: async () => {
      await Promise.all([locker.close(), open.close()]);
    },
  };
}
