import { Router, type RequestHandler } from 'express';
import swaggerUi from 'swagger-ui-express';
import { labelRoute } from './gateway.metrics';
import { openapiDocument } from './openapi';

export const DOCS_PATH = '/docs';

// The page loads its assets by relative URLs, which only resolve below "/docs/".
const withTrailingSlash: RequestHandler = (req, res, next) => {
  if (req.originalUrl.split('?')[0] === DOCS_PATH) return res.redirect(301, `${DOCS_PATH}/`);
  next();
};

/** The contract as JSON (/v1/openapi.json) and as a page a browser can read (/docs). */
export function docsRoutes(): Router {
  const router = Router();
  router.get('/v1/openapi.json', (_req, res) => {
    res.json(openapiDocument);
  });
  router.use(
    DOCS_PATH,
    labelRoute(DOCS_PATH),
    withTrailingSlash,
    swaggerUi.serveFiles(openapiDocument),
    swaggerUi.setup(openapiDocument, { customSiteTitle: 'filesync API' }),
  );
  return router;
}
