import type { RequestHandler } from 'express';
import { pinoHttp } from 'pino-http';
import { newId } from '../../../shared/ids';
import type { Logger } from '../../../shared/logger';

/**
 * One log line per request: its id (the caller's `X-Request-Id` when well-formed, else a new one,
 * echoed in the response), method, URL and status; never headers or bodies, which carry secrets.
 */
export function requestLogger(logger: Logger): RequestHandler {
  return pinoHttp({
    logger,
    genReqId: (req, res) => {
      const given = req.headers['x-request-id'];
      const id = typeof given === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(given) ? given : newId();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    autoLogging: { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' || req.url === '/metrics' },
    // pino-http adds a made-up Error (with a stack) to every 5xx line; a 503 is a planned answer,
    // already logged at warn by the error handler, so its line carries no error object.
    customErrorObject: (_req, res, _err, value: Record<string, unknown>) => {
      if (res.statusCode !== 503) return value;
      const { err: _dropped, ...rest } = value;
      return rest;
    },
    serializers: {
      req: (req: { id: unknown; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  }) as RequestHandler;
}
