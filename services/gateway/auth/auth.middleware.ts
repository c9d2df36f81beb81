import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError } from '../../../shared/errors';
import type { Principal, PrincipalService } from './principal.service';
import { sessionToken } from './session.cookie';
import type { TokenClaims, TokenService } from './token.service';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    /** Set by requireToken: the verified token's user and device, not yet looked up. */
    claims?: TokenClaims;
  }
}

const unauthorized = () => new AppError('UNAUTHORIZED', 'missing or invalid token');

/** The token of an `Authorization: Bearer <token>` header; the scheme is case-insensitive (RFC 9110 11.1). */
export function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer +([A-Za-z0-9_\-.]+)$/i.exec(header);
  return match?.[1];
}

/**
 * The request's token: its `Authorization: Bearer` header, else the web app's session cookie (a
 * state-changing request with the cookie from another origin is refused there, see session.cookie.ts).
 */
export function credential(req: Request, publicUrl?: string): string | undefined {
  return bearerToken(req) ?? (req.headers.authorization ? undefined : sessionToken(req, publicUrl));
}

/**
 * Accepts a request only with a valid token whose user and device both still exist. The token is
 * verified every time; that its user and device exist is read from MySQL or, within AUTH_CACHE_MS
 * of the last read, from the cache (which a deleted account leaves at once).
 */
export function requireUser(tokens: TokenService, principals: PrincipalService, publicUrl?: string): RequestHandler {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const token = credential(req, publicUrl);
    if (!token) throw unauthorized();
    const claims = tokens.verify(token);
    const principal = await principals.current(claims.userId, claims.deviceId);
    if (!principal) throw unauthorized();
    req.principal = principal;
    next();
  };
}

/**
 * For a route whose own first statement checks that the token's user and device still exist (the
 * sync accept), which saves the lookup's round trip: verifies the token only. `confirm` makes the
 * lookup on its own, for that route's requests refused before their statement, so they are answered
 * 401 rather than 400 or 413 exactly as behind requireUser.
 */
export function requireToken(tokens: TokenService, principals: PrincipalService, publicUrl?: string) {
  const verified: RequestHandler = (req, _res, next) => {
    const token = credential(req, publicUrl);
    if (!token) throw unauthorized();
    req.claims = tokens.verify(token);
    next();
  };
  const confirm = async (req: Request): Promise<void> => {
    const claims = claimsOf(req);
    if (!(await principals.lookup(claims.userId, claims.deviceId))) throw unauthorized();
  };
  return { verified, confirm };
}

/** The verified token's claims; routes behind requireToken only. */
export function claimsOf(req: Request): TokenClaims {
  if (!req.claims) throw unauthorized();
  return req.claims;
}

export const requireAdmin: RequestHandler = (req, _res, next) => {
  if (!req.principal?.isAdmin) throw new AppError('FORBIDDEN', 'administrators only');
  next();
};

/** The authenticated caller; routes behind requireUser only. */
export function principalOf(req: Request): Principal {
  if (!req.principal) throw new AppError('UNAUTHORIZED', 'missing or invalid token');
  return req.principal;
}
