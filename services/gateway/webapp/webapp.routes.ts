import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Router, type Request, type Response } from 'express';
import { AppError } from '../../../shared/errors';
import { webAppOutDir } from './webapp.paths';

/**
 * Scripts and styles from this origin only, no inline script or style element, no eval; the app's
 * pages are never framed. Pictures may be blob: URLs (previews of what is being uploaded).
 */
export const APP_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "connect-src 'self'",
  "font-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Addresses of the app's own views: each answers with the app's page, so a reload or bookmark works. */
const APP_PATHS = ['/', '/trash', '/devices', '/app-passwords', '/account', '/users', '/folders/:id', '/s/:token'];

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer | undefined;
}

/** The built files, read once: they change only with a new build, which a restart picks up. */
function loadAssets(dir: string): Map<string, Asset> | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  const assets = new Map<string, Asset>();
  for (const name of names) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    const gz = names.includes(`${name}.gz`) ? readFileSync(path.join(dir, `${name}.gz`)) : undefined;
    assets.set(name, { type, body: readFileSync(path.join(dir, name)), gzip: gz });
  }
  return assets.has('index.html') ? assets : undefined;
}

function securityHeaders(res: Response, shared: boolean): void {
  res.setHeader('Content-Security-Policy', APP_CSP);
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  // A share link's page carries its token in the address: it never goes out as a referrer.
  res.setHeader('Referrer-Policy', shared ? 'no-referrer' : 'same-origin');
}

function send(req: Request, res: Response, asset: Asset, cache: string): void {
  res.setHeader('Content-Type', asset.type);
  res.setHeader('Cache-Control', cache);
  res.setHeader('Vary', 'Accept-Encoding');
  const gzip = asset.gzip && /\bgzip\b/.test(req.get('accept-encoding') ?? '');
  if (gzip) res.setHeader('Content-Encoding', 'gzip');
  const body = gzip ? asset.gzip! : asset.body;
  res.setHeader('Content-Length', body.length);
  res.status(200).end(req.method === 'HEAD' ? undefined : body);
}

/**
 * The web app (docs/WEBAPP.md): its page at `/` and at each of its views' addresses (`/s/:token` for
 * a share link), its hashed bundles under `/app/`. Built by `npm run build` into dist/webapp.
 */
export function webAppRoutes(dir = webAppOutDir()): Router {
  const router = Router();
  let assets: Map<string, Asset> | undefined;
  const built = () => (assets ??= loadAssets(dir));

  const page = (req: Request, res: Response) => {
    const all = built();
    if (!all) throw new AppError('SERVICE_UNAVAILABLE', 'the web app is not built: run npm run build', { retryAfter: 60 });
    securityHeaders(res, req.path.startsWith('/s/'));
    send(req, res, all.get('index.html')!, 'no-cache');
  };
  for (const p of APP_PATHS) {
    router.get(p, page);
  }

  router.get('/app/:name', (req, res, next) => {
    const name = String(req.params.name);
    const asset = name === 'index.html' ? undefined : built()?.get(name);
    if (!asset) return next();
    securityHeaders(res, false);
    // The names carry the content's hash: a new build is new names.
    send(req, res, asset, 'public, max-age=31536000, immutable');
  });

  return router;
}
