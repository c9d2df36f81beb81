import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError } from '../../../shared/errors';
import type { Principal, UserRepository } from '../../../shared/db/user.repository';
import type { TokenService } from './token.service';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

/** The token of an `Authorization: Bearer <token>` header; the scheme is case-insensitive (RFC 9110 11.1). */
export function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer +([A-Za-z0-9_\-.]+)$/i.exec(header);
  return match?.[1];
}

/** Accepts a request only with a valid token whose user and device both still exist. */
export function requireUser(tokens: TokenService, users: UserRepository): RequestHandler {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const token = bearerToken(req);
    if (!token) throw new AppError('UNAUTHORIZED', 'missing or invalid token');
    const claims = tokens.verify(token);
    const principal = await users.findPrincipal(claims.userId, claims.deviceId);
    if (!principal) throw new AppError('UNAUTHORIZED', 'missing or invalid token');
    req.principal = principal;
    next();
  };
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
