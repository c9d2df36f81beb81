import type { Request, Response, Router } from 'express';
import express from 'express';
import type { Logger } from '../../../shared/logger';
import { getContent, putContent } from './content.handler';
import { DAV_REALM, type DavAuthenticator } from './dav.auth';
import { DavError, toDavError } from './dav.errors';
import { DavRequest, type DavServices } from './dav.request';
import { dav, ROOT_NAMESPACES, serialize, x } from './dav.xml';
import { lock, unlock } from './lock.handler';
import { copyOrMove, mkcol, remove } from './namespace.handler';
import { propfind, proppatch, XML_DECLARATION } from './properties.handler';

export const DAV_METHODS = 'OPTIONS, GET, HEAD, PUT, DELETE, PROPFIND, PROPPATCH, MKCOL, COPY, MOVE, LOCK, UNLOCK';

const HANDLERS: Record<string, (r: DavRequest) => Promise<void>> = {
  GET: getContent,
  HEAD: getContent,
  PUT: putContent,
  PROPFIND: propfind,
  PROPPATCH: proppatch,
  MKCOL: mkcol,
  DELETE: remove,
  COPY: (r) => copyOrMove(r, false),
  MOVE: (r) => copyOrMove(r, true),
  LOCK: lock,
  UNLOCK: unlock,
};

function options(res: Response): void {
  res.setHeader('DAV', '1, 2');
  res.setHeader('MS-Author-Via', 'DAV');
  res.setHeader('Allow', DAV_METHODS);
  res.setHeader('Content-Length', '0');
  res.status(200).end();
}

/** An error as RFC 4918 answers it: the status, and the precondition element when there is one. */
function sendError(req: Request, res: Response, err: unknown, logger: Logger): void {
  const error = toDavError(err);
  if (!error) {
    (req.log ?? logger).error({ err }, 'webdav request failed');
  }
  const e = error ?? new DavError(500, 'internal error');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (e.status === 401) res.setHeader('WWW-Authenticate', `Basic realm="${DAV_REALM}", charset="UTF-8"`);
  if (e.retryAfter !== undefined) res.setHeader('Retry-After', String(e.retryAfter));
  res.status(e.status);
  if (e.condition) {
    const hrefs = e.hrefs.map((href) => dav('href', href));
    const body = x('D:error', [e.condition.includes(':') ? x(e.condition, hrefs) : dav(e.condition, hrefs)], ROOT_NAMESPACES);
    res.type('application/xml; charset=utf-8').send(XML_DECLARATION + serialize(body));
  } else if (req.method === 'HEAD') {
    res.end();
  } else {
    res.type('text/plain; charset=utf-8').send(`${e.message}\n`);
  }
}

/**
 * `/dav/`: the caller's tree over WebDAV (RFC 4918 classes 1 and 2) for stock clients. Every request
 * authenticates (dav.auth.ts); each method is a handler over the API's services (dav.tree.ts).
 */
export function davRouter(auth: DavAuthenticator, services: DavServices, logger: Logger): Router {
  const router = express.Router();
  router.use(async (req, res) => {
    try {
      const principal = await auth.authenticate(req);
      if (req.method === 'OPTIONS') return options(res);
      const handler = HANDLERS[req.method];
      if (!handler) {
        res.setHeader('Allow', DAV_METHODS);
        throw new DavError(405, `${req.method} is not a WebDAV method here`);
      }
      await handler(new DavRequest(req, res, principal, services));
    } catch (err) {
      sendError(req, res, err, logger);
    }
  });
  return router;
}
