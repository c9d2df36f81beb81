import express, { type Express, type RequestHandler } from 'express';
import { pinoHttp } from 'pino-http';
import type { Config } from '../../shared/config';
import type { Db } from '../../shared/db/knex';
import { ChangeRepository } from '../../shared/db/change.repository';
import { DeviceRepository } from '../../shared/db/device.repository';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { ListingRepository } from '../../shared/db/listing.repository';
import { ResourceRepository } from '../../shared/db/resource.repository';
import { UserRepository } from '../../shared/db/user.repository';
import { newId } from '../../shared/ids';
import type { Logger } from '../../shared/logger';
import { requireUser } from './auth/auth.middleware';
import { authRoutes } from './auth/auth.routes';
import { AuthService } from './auth/auth.service';
import { ConcurrencyLimiter } from './auth/limiter';
import { PasswordHasher } from './auth/password.hasher';
import { TokenService } from './auth/token.service';
import type { ChangeHub } from './changes/change.hub';
import { changeRoutes } from './changes/changes.routes';
import { ChangesService } from './changes/changes.service';
import { CursorCodec } from './changes/feed.cursor';
import { deviceRoutes } from './devices/devices.routes';
import { fileRoutes } from './files/files.routes';
import { FilesService } from './files/files.service';
import { StagingStorage } from './files/upload.storage';
import { errorHandler, notFoundHandler } from './http/errors.middleware';
import { AdminGate } from './ops/dashboard.auth';
import { dashboardRoutes } from './ops/dashboard.routes';
import { docsRoutes } from './ops/docs.routes';
import { GatewayMetrics, recordMountPath } from './ops/gateway.metrics';
import { healthRoutes } from './ops/health.routes';
import { metricsRoutes } from './ops/metrics.routes';
import { syncRoutes } from './sync/sync.routes';
import type { SyncClient } from './sync/sync.client';
import { userRoutes } from './users/users.routes';

export interface GatewayDeps {
  config: Config;
  jwtSecret: string;
  db: Db;
  sync: SyncClient;
  changes: ChangeHub;
  logger: Logger;
}

export interface Gateway {
  app: Express;
  hasher: PasswordHasher;
  storage: StagingStorage;
  metrics: GatewayMetrics;
}

/** Wires the gateway's routes; starts nothing, so tests can bind it to an ephemeral port. */
export function buildGateway(deps: GatewayDeps): Gateway {
  const { config, db, sync, logger } = deps;
  const users = new UserRepository(db);
  const devices = new DeviceRepository(db);
  const resources = new ResourceRepository(db);
  const hasher = new PasswordHasher(new ConcurrencyLimiter(config.loginConcurrency, config.loginQueueTimeoutMs));
  const tokens = new TokenService(deps.jwtSecret);
  const auth = new AuthService(users, devices, hasher, tokens);
  const storage = new StagingStorage(config.uploadDir);
  const owners = new OwnerTransactions(db, deps.changes);
  const files = new FilesService(owners, resources, config.uploadDir, new ListingRepository(db));
  const feed = new ChangesService(new ChangeRepository(db), deps.changes, new CursorCodec(deps.jwtSecret));
  const authenticated = requireUser(tokens, users);
  const metrics = new GatewayMetrics(sync.queues);
  // A verified Basic login is trusted for a minute: the dashboard sends it with every asset and poll.
  const adminGate = new AdminGate(users, tokens, hasher, { cacheTtlMs: 60_000, failuresPerMinute: config.loginRateLimit });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(metrics.http());
  app.use(
    pinoHttp({
      logger,
      genReqId: (req, res) => {
        const given = req.headers['x-request-id'];
        const id = typeof given === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(given) ? given : newId();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      autoLogging: { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' || req.url === '/metrics' },
      serializers: {
        req: (req: { id: unknown; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
    }) as RequestHandler,
  );

  app.use(healthRoutes(db, sync));
  app.use(metricsRoutes(metrics.registry));
  app.use(docsRoutes());
  app.use(dashboardRoutes(sync.queues, adminGate.middleware()));

  const v1 = express.Router();
  v1.use(recordMountPath);
  // Ahead of the body parser too, so a malformed sign-in counts as "invalid" rather than not at all.
  v1.use('/auth/login', metrics.loginOutcomes());
  // The sync batch is parsed by its own route without loss of 64-bit integers, so it comes first.
  v1.use(syncRoutes(metrics.meterSync(sync), resources, authenticated));
  v1.use(changeRoutes(feed, authenticated));
  v1.use(express.json({ limit: '1mb', strict: true, type: ['application/json', 'application/*+json'] }));
  v1.use(deviceRoutes(devices));
  v1.use(authRoutes(auth, config.loginRateLimit, authenticated));
  v1.use(userRoutes(users, hasher, authenticated));
  v1.use(fileRoutes(files, storage, config.maxUploadBytes, authenticated));
  app.use('/v1', v1);

  app.use(notFoundHandler);
  app.use(errorHandler);
  return { app, hasher, storage, metrics };
}
