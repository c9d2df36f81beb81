import { Router } from 'express';
import type { Db } from '../../../shared/db/knex';
import type { ContentStore } from '../../../shared/storage/content.store';
import type { BatchSubmitter } from '../sync/batch.submitter';

async function databaseAnswers(db: Db): Promise<boolean> {
  try {
    await db.raw('SELECT 1');
    return true;
  } catch {
    return false;
  }
}

/** `storage` in the answer: the content store (UPLOAD_DIR, or the S3 bucket) answers. */
export function healthRoutes(db: Db, sync: BatchSubmitter, store: ContentStore): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const [mysql, redis, storage] = await Promise.all([databaseAnswers(db), sync.ping(), store.ping()]);
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
