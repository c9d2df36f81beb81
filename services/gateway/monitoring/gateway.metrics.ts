import type { Request, RequestHandler, Response } from 'express';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { isAppError } from '../../../shared/errors';
import { batchOutcomeOf, createMetricsRegistry, DURATION_BUCKETS, type BatchOutcome } from '../../../shared/metrics';
import type { BatchSubmitter } from '../sync/batch.submitter';

export type LoginOutcome = 'success' | 'failure' | 'rate_limited' | 'busy' | 'invalid' | 'error';

/** Requests that matched no route share one label, so scanners cannot blow up the series count. */
export const UNMATCHED_ROUTE = '<unmatched>';

/** A request the client gave up on before the response ended (nginx's convention). */
const CLIENT_CLOSED = '499';

const MOUNT_PATH = 'metricsMountPath';
const ROUTE_LABEL = 'metricsRoute';

/** The queue states a scrape reports; completed jobs are trimmed by the queue itself. */
const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

function loginOutcomeOf(status: number): LoginOutcome {
  if (status === 200) return 'success';
  if (status === 401) return 'failure';
  if (status === 429) return 'rate_limited';
  // 503 is the Argon2 limiter turning callers away (or a dependency down): sign-in was not attempted.
  if (status === 503) return 'busy';
  if (status === 400) return 'invalid';
  return 'error';
}

/**
 * Remembers the path the current router is mounted at. Express restores `req.baseUrl` as soon as an
 * error leaves a router, so by the time a failed request finishes the mount path is gone and only
 * `req.route.path` ("/files/:id") is left.
 */
export const recordMountPath: RequestHandler = (req, res, next) => {
  res.locals[MOUNT_PATH] = req.baseUrl;
  next();
};

/** Labels everything below a mounted app (dashboard assets, docs) as one route. */
export const labelRoute =
  (label: string): RequestHandler =>
  (_req, res, next) => {
    res.locals[ROUTE_LABEL] = label;
    next();
  };

/** The Express route pattern that handled a request ("/v1/files/:id"), never the raw URL. */
export function routeOf(req: Request, res: Response): string {
  const label: unknown = res.locals[ROUTE_LABEL];
  if (typeof label === 'string') return label;
  const pattern: unknown = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof pattern !== 'string') return UNMATCHED_ROUTE;
  const mount: unknown = res.locals[MOUNT_PATH];
  return `${typeof mount === 'string' ? mount : req.baseUrl}${pattern}`;
}

/** The gateway's metrics, in a registry of its own. */
export class GatewayMetrics {
  readonly registry: Registry;
  private readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly syncSubmit: Histogram<'outcome'>;
  private readonly logins: Counter<'outcome'>;

  constructor(queues: BatchSubmitter['queues']) {
    const registry = createMetricsRegistry('gateway');
    this.registry = registry;
    this.httpDuration = new Histogram({
      name: 'filesync_http_request_duration_seconds',
      help: 'HTTP requests by method, route pattern and status, from the first byte in to the last byte out',
      labelNames: ['method', 'route', 'status'],
      buckets: DURATION_BUCKETS,
      registers: [registry],
    });
    this.syncSubmit = new Histogram({
      name: 'filesync_sync_submit_duration_seconds',
      help: 'Sync batches as the gateway sees them: record, ring, wait, apply, result; by outcome',
      labelNames: ['outcome'],
      buckets: DURATION_BUCKETS,
      registers: [registry],
    });
    this.logins = new Counter({
      name: 'filesync_login_attempts_total',
      help: 'POST /v1/auth/login by outcome: success, failure, rate_limited, busy, invalid, error',
      labelNames: ['outcome'],
      registers: [registry],
    });
    new Gauge({
      name: 'filesync_sync_queue_jobs',
      help: 'Jobs (rings) per sync queue and state, read from Redis at scrape time',
      labelNames: ['queue', 'state'],
      registers: [registry],
      async collect() {
        this.reset();
        await Promise.all(
          queues.map(async (queue) => {
            // With Redis down the producer connection fails at once; the scrape still answers, without these series.
            const counts = await queue.getJobCounts(...QUEUE_STATES).catch(() => undefined);
            if (!counts) return;
            for (const state of QUEUE_STATES) this.set({ queue: queue.name, state }, counts[state] ?? 0);
          }),
        );
      },
    });
  }

  /** Times every request by route pattern and status; mount it before anything else. */
  http(): RequestHandler {
    return (req, res, next) => {
      const end = this.httpDuration.startTimer();
      // 'close' also fires for requests the client abandons, which 'finish' never reports.
      res.once('close', () => {
        end({ method: req.method, route: routeOf(req, res), status: res.writableFinished ? String(res.statusCode) : CLIENT_CLOSED });
      });
      next();
    };
  }

  /** Counts sign-in outcomes; mount it on the login path, ahead of its rate limiter. */
  loginOutcomes(): RequestHandler {
    return (req, res, next) => {
      if (req.method === 'POST' && req.path === '/') {
        res.once('close', () => this.logins.inc({ outcome: loginOutcomeOf(res.writableFinished ? res.statusCode : 0) }));
      }
      next();
    };
  }

  /**
   * The same client, with `submit` timed. A view over the instance rather than a change inside
   * BatchSubmitter: the client stays about queues only, and every other member is the original's.
   */
  meterSync(sync: BatchSubmitter): BatchSubmitter {
    const observe = this.syncSubmit;
    const submit: BatchSubmitter['submit'] = async (data) => {
      const end = observe.startTimer();
      let outcome: BatchOutcome | 'unavailable' | undefined = 'error';
      try {
        const result = await sync.submit(data);
        outcome = batchOutcomeOf(result);
        return result;
      } catch (err) {
        if (isAppError(err) && err.code === 'SERVICE_UNAVAILABLE') outcome = 'unavailable';
        // Refused by the accept (the token's user or device is gone): not a batch, not counted.
        if (isAppError(err) && err.code === 'UNAUTHORIZED') outcome = undefined;
        throw err;
      } finally {
        if (outcome !== undefined) end({ outcome });
      }
    };
    return Object.create(sync, { submit: { value: submit } }) as BatchSubmitter;
  }
}
