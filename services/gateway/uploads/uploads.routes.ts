import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Server } from '@tus/server';
import { invalid, notFound } from '../../../shared/errors';
import { MAX_METADATA_BYTES } from './upload.metadata';

/** True when every percent-escape of the URL decodes (the tus library decodes it and would throw). */
function wellEncoded(url: string): boolean {
  try {
    decodeURIComponent(url);
    return true;
  } catch {
    return false;
  }
}

/**
 * /v1/uploads speaks tus 1.0.0 through @tus/server. Every request but the CORS/tus preflight
 * (OPTIONS) needs a Bearer token; the tus hooks then scope each upload to its creator. Only the
 * methods tus uses reach the library, each on its own URL: POST on the collection; HEAD, PATCH and
 * DELETE on an upload.
 */
export function uploadRoutes(tus: Server, authenticated: RequestHandler): Router {
  const router = Router();

  const methodOf = (req: Request) => {
    // tus honours X-HTTP-Method-Override, so the checks below look at the method it will act on.
    const override = req.headers['x-http-method-override'];
    return (typeof override === 'string' ? override : req.method).toUpperCase();
  };

  const guard = (allowed: string[]) => (req: Request, res: Response, next: NextFunction) => {
    if (!wellEncoded(req.originalUrl)) return next(invalid('the URL has a malformed percent-encoding'));
    const method = methodOf(req);
    if (method === 'OPTIONS') return next();
    if (!allowed.includes(method)) return next(notFound('no such route'));
    return authenticated(req, res, (err?: unknown) => {
      // The library would take Upload-Defer-Length (501 without the extension); the service requires the length.
      if (!err && method === 'POST' && req.headers['upload-length'] === undefined) return next(invalid('Upload-Length is required'));
      const metadata = req.headers['upload-metadata'];
      if (!err && method === 'POST' && typeof metadata === 'string' && Buffer.byteLength(metadata, 'latin1') > MAX_METADATA_BYTES) {
        return next(invalid(`Upload-Metadata is limited to ${MAX_METADATA_BYTES} bytes`, { field: 'Upload-Metadata' }));
      }
      next(err);
    });
  };

  const handle = (req: Request, res: Response, next: NextFunction) => {
    tus.handle(req, res).catch(next);
  };

  const collection = guard(['POST']);
  const upload = guard(['HEAD', 'PATCH', 'DELETE']);
  router.options('/uploads', collection, handle);
  router.post('/uploads', collection, handle);
  router.options('/uploads/:id', upload, handle);
  router.head('/uploads/:id', upload, handle);
  router.patch('/uploads/:id', upload, handle);
  router.delete('/uploads/:id', upload, handle);
  return router;
}
