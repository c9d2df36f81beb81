import express, { Router } from 'express';
import { Readable } from 'node:stream';
import { BULK_MEDIA_TYPE } from '../../../shared/protocol/bulk';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { discardRest } from '../content/content.routes';
import { sendCoalesced } from '../http/coalesced.pipe';
import type { BulkService } from './bulk.service';

/**
 * `POST /files/bulk` (many files up, one framed body) and `POST /files/bulk/content` (many files'
 * content down, one framed response): docs/SYNC-CLIENT.md, "Many small files together". Mounted
 * ahead of the JSON body parser: the upload body is raw bytes.
 */
export function bulkRoutes(bulk: BulkService, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.post('/files/bulk', authenticated, async (req, res) => {
    try {
      const results = await bulk.upload(principalOf(req), req);
      res.json({ results });
    } catch (err) {
      if (!req.complete) discardRest(req);
      throw err;
    }
  });

  router.post('/files/bulk/content', authenticated, express.json({ limit: '1mb', strict: true }), async (req, res) => {
    const frames = bulk.download(principalOf(req).userId, (req.body as { ids?: unknown } | undefined)?.ids);
    // The first frame settles whether the request was well formed, before any header is sent.
    const first = await frames.next();
    res.setHeader('Content-Type', BULK_MEDIA_TYPE);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    async function* all() {
      if (!first.done) yield first.value;
      yield* frames;
    }
    await sendCoalesced(Readable.from(all()), res);
  });

  return router;
}
