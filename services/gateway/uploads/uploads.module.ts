import { Queue } from 'bullmq';
import type { RequestHandler, Router } from 'express';
import type { Config } from '../../../shared/config';
import type { ResourceRepository } from '../../../shared/db/resource.repository';
import type { Logger } from '../../../shared/logger';
import { redisOptions } from '../../../shared/queue/sync.contract';
import { UPLOAD_EXPIRY_QUEUE } from '../../../shared/queue/upload-expiry.contract';
import { TusStore } from '../../../shared/uploads/tus.store';
import { RedisLocker } from './redis.locker';
import { buildTusServer } from './tus.server';
import { uploadRoutes } from './uploads.routes';
import { UploadsService, type ContentTarget } from './uploads.service';

export interface UploadsModule {
  router: Router;
  service: UploadsService;
  /** Shown in the dashboard: the scheduled removal of expired uploads (run by the worker). */
  queues: Queue[];
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** Resumable uploads: the tus server on a disk store under the upload directory, locked through Redis. */
export function createUploads(deps: {
  config: Config;
  files: ContentTarget;
  resources: ResourceRepository;
  authenticated: RequestHandler;
  logger: Logger;
}): UploadsModule {
  const { config, logger } = deps;
  const store = new TusStore(config.uploadDir, config.uploadExpiryMs);
  const locker = new RedisLocker({ redisUrl: config.redisUrl, prefix: config.queuePrefix }, logger);
  const service = new UploadsService(store, deps.files, deps.resources);
  const tus = buildTusServer({ store, locker, uploads: service, maxUploadBytes: config.maxUploadBytes, logger });
  const queue = new Queue(UPLOAD_EXPIRY_QUEUE, {
    connection: { ...redisOptions(config.redisUrl, 'producer'), lazyConnect: true },
    prefix: config.queuePrefix,
  });
  return {
    router: uploadRoutes(tus, deps.authenticated),
    service,
    queues: [queue],
    ready: () => locker.ready(),
    async close() {
      await Promise.allSettled([queue.close(), locker.close()]);
    },
  };
}
