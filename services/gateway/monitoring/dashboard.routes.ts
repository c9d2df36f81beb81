import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Router, type RequestHandler, type Response } from 'express';
import { contractErrorBodies } from '../http/errors.middleware';
import type { Queue } from 'bullmq';
import { labelRoute } from './gateway.metrics';

export const DASHBOARD_PATH = '/admin/queues';

/**
 * Everything the page loads comes from this gateway: on a closed network an outside host would
 * only stall the page (bull-board links its fonts from a public font service; the stylesheet's
 * fallbacks are used instead). React sets inline styles, hence 'unsafe-inline' for styles only.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Drops every <link> and <script> of the page that points at another host. */
export function withoutOutsideResources(html: string): string {
  return html.replace(/<link\b[^>]*\bhref\s*=\s*["']?(?:https?:)?\/\/[^>]*>/gi, '').replace(/<script\b[^>]*\bsrc\s*=\s*["']?(?:https?:)?\/\/[^>]*>\s*<\/script>/gi, '');
}

/** The dashboard page as bull-board renders it, minus outside resources, under a same-origin policy. */
const localPage: RequestHandler = (_req, res, next) => {
  const render = res.render.bind(res) as (view: string, options: object, cb: (err: Error | null, html: string) => void) => void;
  (res as Response & { render: (view: string, options?: object) => void }).render = (view: string, options: object = {}) => {
    render(view, options, (err, html) => {
      if (err) return next(err);
      res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
      res.type('html').send(withoutOutsideResources(html));
    });
  };
  next();
};

/**
 * The BullMQ dashboard over the sync queue (its jobs are rings of batches kept in MySQL) and the
 * maintenance queues, behind the admin gate. Read-only: rings are the workers' business, and finished
 * jobs are trimmed by the queues themselves.
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
  // Errors of the gate and of bull-board's own API leave in the API's JSON error body.
  router.use(DASHBOARD_PATH, labelRoute(DASHBOARD_PATH), contractErrorBodies, gate, localPage, dashboard);
  return router;
}
