import { Router, type RequestHandler } from 'express';
import swaggerUi from 'swagger-ui-express';
import { labelRoute } from '../monitoring/gateway.metrics';
import { openapiDocument } from './openapi.document';

export const DOCS_PATH = '/docs';

/**
 * The page itself, answered at /docs and /docs/ alike. Its assets are linked relatively, so a base
 * element points them below /docs/ whichever of the two was asked for.
 */
const page = swaggerUi
  .generateHTML(openapiDocument, { customSiteTitle: 'filesync API' })
  .replace('<head>', `<head>\n  <base href="${DOCS_PATH}/">`);

const servePage: RequestHandler = (req, res, next) => {
  if ((req.method === 'GET' || req.method === 'HEAD') && (req.path === '/' || req.path === '/index.html')) {
    res.type('html').send(page);
    return;
  }
  next();
};

/** The contract as JSON (/v1/openapi.json) and as a page a browser can read (/docs). */
export function docsRoutes(): Router {
  const router = Router();
  router.get('/v1/openapi.json', (_req, res) => {
    res.json(openapiDocument);
  });
  // Mounted like the dashboard, as a browsable page rather than a route of the API.
  router.use(DOCS_PATH, labelRoute(DOCS_PATH), servePage, swaggerUi.serveFiles(openapiDocument));
  return router;
}
