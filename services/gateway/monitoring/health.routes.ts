import { Router } from 'express';
import type { ReadinessService } from './readiness.service';

/** `storage` in the answer: the content store (UPLOAD_DIR, or the S3 bucket) answers. */
export function healthRoutes(readiness: ReadinessService): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const { mysql, redis, storage } = await readiness.check();
    if (mysql && redis && storage) {
      res.json({ status: 'ready', mysql, redis, storage });
      return;
    }
    res.setHeader('Retry-After', '5');
    res.status(503).json({
      error: { code: 'SERVICE_UNAVAILABLE', message: 'a dependency does not answer', details: { mysql, redis, storage } },
    });
  });
  return router;
}
