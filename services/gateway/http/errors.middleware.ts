import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, isAppError } from '../../../shared/errors';
import { isDatabaseUnavailable } from '../../../shared/db/errors';

/** Body-parser and multer errors carry a `type` or `code`; map the ones a client can cause. */
function fromFrameworkError(err: unknown): AppError | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { type?: string; status?: number; code?: string; message?: string };
  switch (e.type) {
    case 'entity.too.large':
      return new AppError('INVALID_REQUEST', 'request body is larger than 1 MiB', { status: 413 });
    case 'entity.parse.failed':
      return new AppError('INVALID_REQUEST', 'request body is not valid JSON');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError('INVALID_REQUEST', 'unsupported request body encoding');
    case 'request.aborted':
      return new AppError('INVALID_REQUEST', 'request aborted');
  }
  if (e.status && e.status >= 400 && e.status < 500) {
    return new AppError('INVALID_REQUEST', e.message ?? 'bad request', { status: e.status === 413 ? 413 : 400 });
  }
  return undefined;
}

export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  const framework = fromFrameworkError(err);
  if (framework) return framework;
  if (isDatabaseUnavailable(err)) return new AppError('SERVICE_UNAVAILABLE', 'the database is unavailable', { retryAfter: 2 });
  return new AppError('INTERNAL', 'internal error');
}

/** The one error handler: every failure leaves in the contract's shape, never a stack trace. */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  const appError = toAppError(err);
  if (appError.code === 'INTERNAL' || appError.code === 'SERVICE_UNAVAILABLE') {
    req.log?.error({ err }, 'request failed');
  }
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (appError.retryAfter !== undefined) res.setHeader('Retry-After', String(appError.retryAfter));
  res.status(appError.status).json({ error: appError.toBody() });
};

export const notFoundHandler: RequestHandler = (_req, _res, next) => {
  next(new AppError('NOT_FOUND', 'no such route'));
};
