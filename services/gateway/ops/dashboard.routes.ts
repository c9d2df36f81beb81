import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Router, type RequestHandler } from 'express';
import type { Queue } from 'bullmq';
import { labelRoute } from './gateway.metrics';

export const DASHBOARD_PATH = '/admin/queues';

/**
 * The BullMQ dashboard over the sync queue (its jobs are rings of batches kept in MySQL), behind the
 * admin gate. Read-only: rings are the workers' business, and finished jobs are trimmed by the queue.
 */
export function dashboardRoutes(queues: Queue[], gate: RequestHandler): Router {
  const board = new ExpressAdapter();
  board.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: true })),
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'filesync sync queues', hideDocsLink: true } },
  });
  const dashboard = board.getRouter();
  dashboard.disable('x-powered-by');

  const router = Router();
  router.use(DASHBOARD_PATH, labelRoute(DASHBOARD_PATH), gate, dashboard);
  return router;
}
