import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../../shared/config';
import { ChangeRepository } from '../../shared/db/repositories/change.repository';
import { ContentRepository } from '../../shared/db/repositories/content.repository';
import type { Db } from '../../shared/db/knex';
import type { Logger } from '../../shared/logger';
import { openMaintenanceQueue } from '../../shared/queue/maintenance.contract';
import { openThumbnailQueue } from '../../shared/queue/thumbnail.contract';
import { openChunkListQueue } from '../../shared/queue/chunk-list.contract';
import type { ContentStore } from '../../shared/storage/content.store';
import { createContentStore } from '../../shared/storage/store.factory';
import { claimStore } from '../../shared/content/store.identity';
import { buildGateway, type Gateway } from './app';
import { ensureInitialAdmin, resolveJwtSecret } from './bootstrap';
import { ChangeHub, FEED_RECHECK_MS } from './changes/change.hub';
import { GracefulServer } from './http/graceful.server';
import { createHttpServer, listen, type HttpServerOptions } from './http/http.server';
import { BatchSubmitter } from './sync/batch.submitter';

/** Staging files older than this at start-up belong to uploads no gateway is still receiving. */
const STALE_STAGING_MS = 24 * 3600 * 1000;

export interface GatewayOptions {
  config: Config;
  /** The gateway's pool; its owner destroys it after `close()`. */
  db: Db;
  logger: Logger;
  /** The content store instead of the one the configuration names (a test that wraps it). */
  store?: ContentStore;
  /** The port to bind instead of PORT; 0 lets the OS pick one. */
  port?: number;
  /** The address to bind; every interface by default. */
  host?: string;
  server?: HttpServerOptions;
}

export interface OpenGateway extends Omit<Gateway, 'close'> {
  server: Server;
  /** The bound port, not the configured one: with port 0 the OS picks it. */
  port: number;
  sync: BatchSubmitter;
  changes: ChangeHub;
  /**
   * Stops taking connections, lets requests in flight finish within `deadlineMs` (then cuts them),
   * removes the staging files of uploads that did not finish and closes what openGateway opened.
   */
  close(deadlineMs: number): Promise<{ outcome: 'drained' | 'forced'; unfinishedUploads: number }>;
}

/**
 * The gateway as main.ts runs it, listening: the store claimed for this database, the batch submitter,
 * the change hub, the maintenance and thumbnail queues, the routes, the initial administrator. The test harness opens
 * it here too, so whatever is wired here reaches the tests.
 */
export async function openGateway(options: GatewayOptions): Promise<OpenGateway> {
  const { config, db, logger } = options;
  // Before anything reads or writes content: refuses to start on a store that is not the database's.
  const store = options.store ?? createContentStore(config);
  await claimStore(store, new ContentRepository(db));
  const jwtSecret = await resolveJwtSecret(config);
  const sync = new BatchSubmitter({ redis: config, prefix: config.queuePrefix, timeoutMs: config.syncTimeoutMs, db }, logger);
  const positions = new ChangeRepository(db);
  const changes = new ChangeHub(config, config.queuePrefix, { maxHeld: config.feedMaxHeld, maxPerUser: config.feedMaxHeldPerUser }, logger, {
    positions: (userIds) => positions.lastSeqs(userIds),
    everyMs: FEED_RECHECK_MS,
  });
  const maintenance = openMaintenanceQueue(config, config.queuePrefix);
  const thumbnails = openThumbnailQueue(config, config.queuePrefix);
  const chunkLists = config.chunkListsAhead ? openChunkListQueue(config, config.queuePrefix) : undefined;
  const gateway = buildGateway({ config, jwtSecret, db, sync, changes, logger, maintenanceQueues: [maintenance], thumbnailQueue: thumbnails, chunkListQueue: chunkLists, store });
  const { hasher, storage } = gateway;
  if ((await ensureInitialAdmin(config, db, hasher)) === 'created') logger.info('initial administrator created');
  await Promise.all([hasher.warmUp(), sync.ready(), changes.ready(), gateway.uploads.ready(), gateway.principals.ready(), storage.sweep(STALE_STAGING_MS)]);

  const server = createHttpServer(gateway.app, { stallTimeoutMs: config.responseStallMs, ...options.server });
  const graceful = new GracefulServer(server);
  await listen(server, options.port ?? config.port, options.host ?? config.host);
  const { port } = server.address() as AddressInfo;
  logger.info({ port }, 'gateway listening');

  return {
    ...gateway,
    server,
    port,
    sync,
    changes,
    async close(deadlineMs) {
      // Held change-feed requests are answered now rather than at the end of their wait.
      const [, outcome] = await Promise.all([changes.close(), graceful.close(deadlineMs)]);
      // Uploads cut by the deadline may still be writing their staging files; none may stay behind.
      const unfinishedUploads = await storage.removeInFlight();
      await Promise.allSettled([sync.close(), maintenance.close(), thumbnails.close(), chunkLists?.close(), gateway.close()]);
      return { outcome, unfinishedUploads };
    },
  };
}
