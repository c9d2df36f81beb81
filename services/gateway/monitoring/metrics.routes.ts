import { Router } from 'express';
import type { Registry } from 'prom-client';
import { renderMetrics } from '../../../shared/metrics';

/** GET /metrics in the Prometheus text format. Like the health checks it needs no token. */
export function metricsRoutes(registry: Registry): Router {
  const router = Router();
  router.get('/metrics', async (_req, res) => {
    const { contentType, body } = await renderMetrics(registry);
    res.setHeader('Cache-Control', 'no-store');
    res.type(contentType).send(body);
  });
  return router;
}
