import type { Queue } from 'bullmq';
import express, { type Express } from 'express';
import type { Config } from '../../shared/config';
import type { Db } from '../../shared/db/knex';
import { ChangeRepository } from '../../shared/db/repositories/change.repository';
import { DeviceRepository } from '../../shared/db/repositories/device.repository';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { ListingRepository } from '../../shared/db/repositories/listing.repository';
import { ResourceRepository } from '../../shared/db/repositories/resource.repository';
import { TrashRepository } from '../../shared/db/repositories/trash.repository';
import { ReservationRepository } from '../../shared/quota/reservation.repository';
import { UsageRepository } from '../../shared/quota/usage.repository';
import { UserRepository } from '../../shared/db/repositories/user.repository';
import { UserSlots, userWriteGate } from '../../shared/fairness/user.slots';
import { VersionRepository } from '../../shared/db/repositories/version.repository';
import { UploadReservations } from '../../shared/quota/upload.reservations';
import { retentionMs, TrashPurger } from '../../shared/lifecycle/trash.purger';
import type { ContentStore } from '../../shared/storage/content.store';
import { ContentWriter } from '../../shared/content/content.writer';
import { ContentCrcRepository } from '../../shared/content/content-crc.repository';
import { createContentStore } from '../../shared/storage/store.factory';
import { ChunkListRepository } from '../../shared/chunks/chunk-list.repository';
import { withChunkListCleanup } from '../../shared/chunks/chunk-lists.cleanup';
import { UploadsStreaming, uploadsStreamingKey, type MarkClient } from '../../shared/chunks/uploads.quiet';
import { ListClaims, type ClaimClient } from '../../shared/chunks/list.claims';
import { bullPrefix } from '../../shared/redis/redis.connection';
import type { Logger } from '../../shared/logger';
import { requireToken, requireUser } from './auth/auth.middleware';
import { authRoutes } from './auth/auth.routes';
import { sessionRoutes } from './auth/session.routes';
import { SessionService } from './auth/session.service';
import { AuthService } from './auth/auth.service';
import { ConcurrencyLimiter } from './auth/limiter';
import { PasswordConfirmation } from './auth/password.confirmation';
import { PasswordHasher } from './auth/password.hasher';
import { PrincipalCache } from './auth/principal.cache';
import { PrincipalService } from './auth/principal.service';
import { clientAddress, clientAndUsername, RateLimits } from './auth/rate.limits';
import { TokenService } from './auth/token.service';
import type { ChangeHub } from './changes/change.hub';
import { changeRoutes } from './changes/changes.routes';
import { ChangesService } from './changes/changes.service';
import { CursorCodec } from './changes/feed.cursor';
import { contentRoutes } from './content/content.routes';
import { deltaModule } from './delta/delta.module';
import { bulkRoutes } from './bulk/bulk.routes';
import { BulkService } from './bulk/bulk.service';
import { ContentService } from './content/content.service';
import { deviceRoutes } from './devices/devices.routes';
import { DevicesService } from './devices/devices.service';
import { UserDevicesService } from './devices/user-devices.service';
import { mountDownloads } from './content/download.routes';
import { fileRoutes } from './files/files.routes';
import { FilesService } from './files/files.service';
import { errorHandler, notFoundHandler, refuseDeepJson } from './http/errors.middleware';
import { requestLogger } from './http/request.logger';
import { markUploadsStreaming } from './http/uploads.streaming';
import { AdminGate } from './monitoring/dashboard.auth';
import { dashboardRoutes } from './monitoring/dashboard.routes';
import { docsRoutes } from './openapi/docs.routes';
import { GatewayMetrics, recordMountPath } from './monitoring/gateway.metrics';
import { healthRoutes } from './monitoring/health.routes';
import { metricsRoutes } from './monitoring/metrics.routes';
import { ReadinessService } from './monitoring/readiness.service';
import { syncRoutes } from './sync/sync.routes';
import type { BatchSubmitter } from './sync/batch.submitter';
import { PermissionsService } from './sync/permissions.service';
import { trashRoutes } from './trash/trash.routes';
import { TrashService } from './trash/trash.service';
import { UploadStaging } from './uploads/upload.staging';
import { createUploads, type UploadsModule } from './uploads/uploads.module';
import { storageMetrics } from './quota/usage.metrics';
import { UsageService } from './quota/usage.service';
import { userRoutes } from './users/users.routes';
import { UsersService } from './users/users.service';
import { AppPasswordRepository } from '../../shared/db/repositories/app-password.repository';
import { DavRepository } from '../../shared/db/repositories/dav.repository';
import { AppPasswordSecrets } from './app-passwords/app-password.secret';
import { appPasswordRoutes } from './app-passwords/app-passwords.routes';
import { AppPasswordsService } from './app-passwords/app-passwords.service';
import { DavAuthenticator } from './dav/dav.auth';
import { DavLockStore } from './dav/dav.locks';
import { DAV_MOUNT } from './dav/dav.paths';
import type { QuotaReader } from './dav/dav.request';
import { davRouter } from './dav/dav.router';
import { DavService } from './dav/dav.service';
import { DavTree } from './dav/dav.tree';
import { versionRoutes } from './versions/versions.routes';
import { LinkRepository } from '../../shared/db/repositories/link.repository';
import { TreeRepository } from '../../shared/db/repositories/tree.repository';
import { linkMetrics } from './links/link.metrics';
import { LinkSecrets } from './links/link.secrets';
import { LinkTransfers } from './links/link.transfers';
import { LinkUploads } from './links/link.uploads';
import { linkRoutes } from './links/links.routes';
import { LinksService } from './links/links.service';
import { publicLinkRoutes } from './links/public.routes';
import { PublicLinksService } from './links/public.service';
import { itemRoutes } from './items/items.routes';
import { ItemsService } from './items/items.service';
import { webAppRoutes } from './webapp/webapp.routes';
import { archiveRoutes } from './archive/archive.routes';
import { ArchiveService } from './archive/archive.service';
import { TransferSlots } from './http/transfer.slots';
import { VersionsService } from './versions/versions.service';
import { ThumbnailRepository } from '../../shared/thumbnails/thumbnail.repository';
import { ThumbnailRequests } from '../../shared/thumbnails/thumbnail.requests';
import type { ThumbnailJobData, ThumbnailJobResult } from '../../shared/queue/thumbnail.contract';
import type { ChunkListJobData, ChunkListJobResult } from '../../shared/queue/chunk-list.contract';
import { ChunkListRequests } from '../../shared/chunks/chunk-list.requests';
import { thumbnailRoutes } from './thumbnails/thumbnail.routes';
import { ThumbnailService } from './thumbnails/thumbnail.service';

export interface GatewayDeps {
  config: Config;
  jwtSecret: string;
  db: Db;
  sync: BatchSubmitter;
  changes: ChangeHub;
  logger: Logger;
  /** Queues shown on the dashboard beside the sync queue: the maintenance queue. */
  maintenanceQueues?: Queue[];
  /** Where committed images ask for their thumbnails (also on the dashboard); none: no thumbnails are made. */
  thumbnailQueue?: Queue<ThumbnailJobData, ThumbnailJobResult>;
  /** Where whole uploads of large files ask for their chunk lists (also on the dashboard); none: lists are made when first asked for. */
  chunkListQueue?: Queue<ChunkListJobData, ChunkListJobResult>;
  /** The content store; by default the one the configuration names. */
  store?: ContentStore;
}

export interface Gateway {
  app: Express;
  hasher: PasswordHasher;
  store: ContentStore;
  storage: UploadStaging;
  metrics: GatewayMetrics;
  /** Resumable uploads; `ready()` once their lock's Redis subscription is up. */
  uploads: UploadsModule;
  /** Who recently passed the token check; `ready()` once its revocation subscription is up. */
  principals: PrincipalCache;
  /** Closes what buildGateway opened itself (the Redis connections of the rate limits, the principal cache and the upload lock). */
  close(): Promise<void>;
}

/**
 * Wires the gateway's routes; binds no port, so tests can bind it to an ephemeral one. It opens Redis
 * connections for the rate limits, the principal cache and the upload lock; `close()` ends them.
 */
export function buildGateway(deps: GatewayDeps): Gateway {
  const { config, db, sync, logger } = deps;
  const users = new UserRepository(db);
  const devices = new DeviceRepository(db);
  const resources = new ResourceRepository(db);
  const hasher = new PasswordHasher(new ConcurrencyLimiter(config.loginConcurrency, config.loginQueueTimeoutMs));
  const tokens = new TokenService(deps.jwtSecret);
  const auth = new AuthService(users, devices, hasher, tokens);
  // Removing content also removes its chunk list, whichever path removes it.
  const store = withChunkListCleanup(deps.store ?? createContentStore(config), new ChunkListRepository(db));
  const storage = new UploadStaging(store);
  // One user's writes wait for that user's lock; at most userWriteConcurrency of them hold a connection.
  const writeSlots = new UserSlots(config.userWriteConcurrency);
  const owners = new OwnerTransactions(db, deps.changes, userWriteGate(writeSlots, config.userWriteWaitMs));
  const thumbnailRequests = deps.thumbnailQueue ? new ThumbnailRequests(deps.thumbnailQueue, logger) : undefined;
  const chunkListRequests = deps.chunkListQueue ? new ChunkListRequests(deps.chunkListQueue, logger) : undefined;
  const chunkListQueue = deps.chunkListQueue;
  const streaming = chunkListQueue
    ? new UploadsStreaming(async () => (await chunkListQueue.client) as unknown as MarkClient, uploadsStreamingKey(bullPrefix(config, config.queuePrefix)), logger)
    : undefined;
  const listClaims = chunkListQueue ? new ListClaims(async () => (await chunkListQueue.client) as unknown as ClaimClient, bullPrefix(config, config.queuePrefix)) : undefined;
  const writer = new ContentWriter(owners, store, logger, (content) => {
    thumbnailRequests?.committed(content);
    if (!content.listed) chunkListRequests?.committed(content);
  });
  const metrics = new GatewayMetrics(sync.queues);
  const usageRepo = new UsageRepository(db);
  const usage = new UsageService(usageRepo, users);
  const quota = storageMetrics(metrics.registry, usage);
  const versionPolicy = { maxVersions: config.maxVersions, retentionMs: retentionMs(config.versionRetentionDays) };
  const files = new FilesService(owners, resources, writer, new ListingRepository(db), store, usageRepo, quota);
  const trashRepo = new TrashRepository(db);
  const trash = new TrashService(owners, trashRepo, new TrashPurger(owners, trashRepo, store, logger));
  const content = new ContentService(resources, writer, versionPolicy, usageRepo, quota);
  const versions = new VersionsService(owners, resources, new VersionRepository(db), content, store);
  const reservations = new UploadReservations(owners, new ReservationRepository(db), store, quota);
  const feed = new ChangesService(new ChangeRepository(db), deps.changes, new CursorCodec(deps.jwtSecret));
  const principals = new PrincipalCache(config.authCacheMs, config, config.queuePrefix, logger);
  const principalService = new PrincipalService(users, principals);
  const authenticated = requireUser(tokens, principalService, config.publicUrl);
  const uploads = createUploads({ config, store, files, content, reservations, authenticated, logger });
  const limits = new RateLimits(config, config.queuePrefix, logger);
  // A verified Basic login is trusted for a minute: the dashboard sends it with every asset and poll.
  const adminGate = new AdminGate(principalService, tokens, hasher, { cacheTtlMs: 60_000, attempts: limits.attempts('admin-basic', config.loginRateLimit) });
  // The address limit comes first, so rotating usernames from one address cannot dodge it.
  const loginLimits = [
    limits.limit('login-address', config.loginAddressRateLimit, clientAddress, 'too many sign-in attempts from this address, retry later'),
    limits.limit('login', config.loginRateLimit, clientAndUsername, 'too many sign-in attempts, retry later'),
  ];
  const registerLimit = limits.limit('register', config.registerRateLimit, clientAddress, 'too many device registrations from this address, retry later');

  // Minting an app password asks for the account password, counted like a sign-in.
  const confirmation = new PasswordConfirmation(users, hasher, {
    address: limits.attempts('login-address', config.loginAddressRateLimit),
    account: limits.attempts('login', config.loginRateLimit),
  });
  const appPasswords = new AppPasswordsService(new AppPasswordRepository(db), new AppPasswordSecrets(deps.jwtSecret), principals, logger, confirmation);
  const dav = new DavService(new DavRepository(db));
  const davLocks = new DavLockStore(config.redisUrl, config.queuePrefix, logger);
  // RFC 4331's figures from the user's byte counters: what the quota leaves, none without a quota.
  const davQuota: QuotaReader = {
    figures: async (userId) => {
      const u = await usage.of(userId);
      return { usedBytes: u.usedBytes, availableBytes: u.quotaBytes === null ? null : Math.max(0, u.quotaBytes - u.usedBytes) };
    },
  };
  const davAuth = new DavAuthenticator({
    tokens,
    principals: principalService,
    appPasswords,
    addressAttempts: limits.attempts('login-address', config.loginAddressRateLimit),
    accountAttempts: limits.attempts('login', config.loginRateLimit),
  });
  const davTree = new DavTree(dav, files, content, storage, sync, config.maxUploadBytes);
  const linkRepo = new LinkRepository(db);
  const linkSecrets = new LinkSecrets(deps.jwtSecret);
  const links = new LinksService(linkRepo, resources, hasher, linkSecrets);
  const publicLinks = new PublicLinksService(linkRepo, resources, new TreeRepository(db), hasher, linkSecrets, {
    perLink: limits.attempts('link-unlock', config.loginRateLimit),
    perAddress: limits.attempts('link-unlock-address', config.loginAddressRateLimit),
  });
  const publicLinkDeps = {
    links: publicLinks,
    linkRepo,
    files,
    store,
    transfers: new LinkTransfers(config.linkTransfersPerOwner),
    uploads: new LinkUploads(files, storage, config.maxUploadBytes),
    metrics: linkMetrics(metrics.registry),
  };

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Which X-Forwarded-For hops to believe for req.ip (the address the rate limits count); none by default.
  app.set('trust proxy', config.trustProxy);
  app.use(metrics.http());
  app.use(requestLogger(logger));
  if (streaming) app.use(markUploadsStreaming(streaming));

  // Downloads first: no other route answers GET on a file's content, and each one passed costs CPU.
  mountDownloads(app, files, store, authenticated);
  app.use(healthRoutes(new ReadinessService(db, sync, store)));
  app.use(metricsRoutes(metrics.registry));
  app.use(docsRoutes());
  app.use(dashboardRoutes([...sync.queues, ...(deps.maintenanceQueues ?? []), ...(deps.thumbnailQueue ? [deps.thumbnailQueue] : []), ...(deps.chunkListQueue ? [deps.chunkListQueue] : [])], adminGate.middleware()));

  // WebDAV bodies are raw content or XML, read by its own handlers: it comes before any body parser.
  app.use(DAV_MOUNT, davRouter(davAuth, { tree: davTree, locks: davLocks, dav, quota: davQuota }, logger));

  const v1 = express.Router();
  v1.use(recordMountPath);
  // Share links' public side: no Authorization, bodies of its own (multipart, a small JSON unlock).
  v1.use(publicLinkRoutes(publicLinkDeps));
  // Ahead of the body parser too, so a malformed sign-in counts as "invalid" rather than not at all.
  v1.use('/auth/login', metrics.loginOutcomes());
  // The sync batch is parsed by its own route without loss of 64-bit integers, so it comes first.
  v1.use(syncRoutes(metrics.meterSync(sync), new PermissionsService(resources), { authenticated, token: requireToken(tokens, principalService, config.publicUrl) }));
  v1.use(changeRoutes(feed, authenticated));
  // tus bodies are raw bytes, streamed by the library; no body parser may touch them.
  v1.use(uploads.router);
  // Raw content bodies of any type, so also ahead of the JSON parser.
  v1.use(contentRoutes(content, storage, config.maxUploadBytes, authenticated));
  v1.use(deltaModule({ db, store, content, maxUploadBytes: config.maxUploadBytes, authenticated, logger, listClaims }));
  v1.use(bulkRoutes(new BulkService(store, files, content, config.maxUploadBytes), authenticated));
  v1.use(express.json({ limit: '1mb', strict: true, type: ['application/json', 'application/*+json'], verify: refuseDeepJson }));
  v1.use(deviceRoutes(new DevicesService(devices), registerLimit, new UserDevicesService(devices, principals), authenticated));
  v1.use(authRoutes(auth, loginLimits, authenticated));
  v1.use(sessionRoutes(new SessionService(users, devices, new DevicesService(devices), hasher, tokens, new UserDevicesService(devices, principals)), loginLimits, authenticated, config.publicUrl));
  v1.use(itemRoutes(new ItemsService(resources, new ListingRepository(db)), authenticated));
  v1.use(userRoutes(new UsersService(users, hasher, config.defaultQuotaBytes, principals), usage, authenticated));
  v1.use(thumbnailRoutes(new ThumbnailService(resources, new ThumbnailRepository(db), store, thumbnailRequests), authenticated));
  v1.use(fileRoutes(files, storage, config.maxUploadBytes, authenticated));
  v1.use(trashRoutes(trash, authenticated));
  v1.use(versionRoutes(versions, store, authenticated));
  v1.use(appPasswordRoutes(appPasswords, authenticated));
  v1.use(linkRoutes(links, config.publicUrl, authenticated));
  v1.use(archiveRoutes(new ArchiveService(resources, linkRepo, new ContentCrcRepository(db)), store, new TransferSlots(config.archivesPerUser, 'too many archives at once; retry shortly'), authenticated));
  app.use('/v1', v1);
  // The web app's pages and bundles (docs/WEBAPP.md); the API stays under /v1.
  app.use(webAppRoutes());

  app.use(notFoundHandler);
  app.use(errorHandler);
  return {
    app,
    hasher,
    store,
    storage,
    metrics,
    uploads,
    principals,
    close: async () => {
      principals.close();
      davLocks.close();
      streaming?.close();
      await Promise.all([limits.close(), uploads.close()]);
    },
  };
}
