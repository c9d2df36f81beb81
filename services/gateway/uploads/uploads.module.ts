import type { RequestHandler, Router } from 'express';
import type { Config } from '../../../shared/config';
import type { ResourceRepository } from '../../../shared/db/resource.repository';
import type { Logger } from '../../../shared/logger';
import { TusStore } from '../../../shared/uploads/tus.store';
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
 * Resumable uploads: the tus server on a disk store under the upload directory, locked through
 * Redis. Their expiry is a maintenance task of the workers (services/worker/maintenance.workers.ts).
 */
export function createUploads(deps: {
  config: Config;
  files: FileTarget;
  content: ContentTarget;
  resources: ResourceRepository;
  authenticated: RequestHandler;
  logger: Logger;
}): UploadsModule {
  const { config, logger } = deps;
  const open = new OpenUploads(
    { redisUrl: config.redisUrl, prefix: config.queuePrefix, max: config.maxOpenUploads, expiryMs: config.uploadExpiryMs },
    logger,
  );
  const store = new TusStore(config.uploadDir, config.uploadExpiryMs, async (id, metadata) => {
    const owner = ownerOf(metadata);
    if (owner) await open.release(owner.userId, id);
  });
  const locker = new RedisLocker({ redisUrl: config.redisUrl, prefix: config.queuePrefix }, logger);
  const service = new UploadsService(store, deps.files, deps.content, deps.resources, open);
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
