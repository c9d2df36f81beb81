import { Router } from 'express';
import type { Db } from '../../../shared/db/knex';
import type { SyncClient } from '../sync/sync.client';

async function databaseAnswers(db: Db): Promise<boolean> {
  try {
    await db.raw('SELECT 1');
    return true;
  } catch {
    return false;
  }
}

export function healthRoutes(db: Db, sync: SyncClient): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const [mysql, redis] = await Promise.all([databaseAnswers(db), sync.ping()]);
    if (mysql && redis) {
      res.json({ status: 'ready', mysql, redis });
      return;
    }
    res.setHeader('Retry-After', '5');
    res.status(503).json({
      error: { code: 'SERVICE_UNAVAILABLE', message: 'a dependency does not answer', details: { mysql, redis } },
    });
  });
  return router;
}
