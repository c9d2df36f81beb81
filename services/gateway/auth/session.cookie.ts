import type { CookieOptions, Request, Response } from 'express';
import { AppError } from '../../../shared/errors';
import { TOKEN_TTL_SECONDS } from './token.service';

/**
 * The web app's session: the same signed token a client sends as `Authorization: Bearer`, kept in an
 * HttpOnly cookie so no script of the page can read it. A request that changes state with it must
 * come from the app's own origin (docs/WEBAPP.md, "Session").
 */
export const SESSION_COOKIE = 'filesync_session';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** `Secure` whenever the request came over https (behind a proxy: as TRUST_PROXY lets Express see it). */
export function sessionCookieOptions(req: Request): CookieOptions {
  return { httpOnly: true, sameSite: 'lax', secure: req.secure, path: '/', maxAge: TOKEN_TTL_SECONDS * 1000 };
}

export function setSessionCookie(req: Request, res: Response, token: string): void {
  res.cookie(SESSION_COOKIE, token, sessionCookieOptions(req));
}

export function clearSessionCookie(req: Request, res: Response): void {
  const { maxAge: _unused, ...options } = sessionCookieOptions(req);
  res.clearCookie(SESSION_COOKIE, options);
}

/** The session cookie's value, when the request carries one. */
export function sessionCookie(req: Request): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_\-.]+$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

/**
 * Whether the request was sent by a page of this origin. Browsers send `Sec-Fetch-Site` with every
 * request (the same host on another port is `same-site`, refused); older ones send `Origin` with every
 * non-GET fetch, compared with the request's own origin or PUBLIC_URL. A request with neither is not
 * a browser's same-origin request and is refused.
 */
export function isSameOrigin(req: Request, publicUrl: string | undefined): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin';
  const origin = req.headers.origin;
  if (typeof origin !== 'string') return false;
  return origin === `${req.protocol}://${req.get('host') ?? ''}` || (publicUrl !== undefined && origin === publicUrl);
}

export function refuseCrossOrigin(req: Request, publicUrl: string | undefined): void {
  if (!isSameOrigin(req, publicUrl)) throw new AppError('FORBIDDEN', 'requests from another origin are refused');
}

/**
 * The token of the session cookie, for a request without `Authorization`. A state-changing request
 * carrying it from another origin is refused (403) before anything else happens.
 */
export function sessionToken(req: Request, publicUrl: string | undefined): string | undefined {
  const token = sessionCookie(req);
  if (token === undefined) return undefined;
  if (!SAFE_METHODS.has(req.method)) refuseCrossOrigin(req, publicUrl);
  return token;
}
