import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, isAppError, type ErrorCode } from '../../../shared/errors';
import { ERROR_CODES } from '../../../shared/protocol';
import { isDatabaseUnavailable } from '../../../shared/db/errors';
import { jsonTooDeep, MAX_JSON_DEPTH } from '../../../shared/json';

export const tooDeep = () => new AppError('INVALID_REQUEST', `request body is nested too deeply (more than ${MAX_JSON_DEPTH} levels)`);

/** express.json's `verify` hook: refuses a body nested too deeply before JSON.parse sees it. */
export function refuseDeepJson(_req: unknown, _res: unknown, body: Buffer): void {
  if (jsonTooDeep(body)) throw tooDeep();
}

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

/**
 * The one error handler: every failure leaves in the API's error shape, never a stack trace. A 503 the
 * service chose to answer (load shedding, a sync timeout, Redis away) is expected under load and is
 * logged at warn without a stack; an unexpected failure, or a database that does not answer, at error.
 */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  const appError = toAppError(err);
  if (isAppError(err) && err.code === 'SERVICE_UNAVAILABLE') {
    req.log?.warn({ code: err.code, reason: err.message }, 'request shed');
  } else if (appError.code === 'INTERNAL' || appError.code === 'SERVICE_UNAVAILABLE') {
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

const CODE_BY_STATUS: Record<number, ErrorCode> = { 401: 'UNAUTHORIZED', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 413: 'FILE_TOO_LARGE', 429: 'RATE_LIMITED', 503: 'SERVICE_UNAVAILABLE' };

function isContractBody(body: unknown): boolean {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return typeof error === 'object' && error !== null && typeof error.code === 'string' && error.code in ERROR_CODES && typeof error.message === 'string';
}

/** A readable message from whatever a library answered with: `{error}`, `{message}` or text. */
function messageOf(body: unknown, status: number): string {
  let value = body;
  if (Buffer.isBuffer(value)) value = value.toString('utf8');
  if (typeof value === 'string') {
    const text = value;
    value = safeParse(text);
    if (value === undefined) return text.trim().slice(0, 200) || `request failed with status ${status}`;
  }
  const { error, message } = (value ?? {}) as { error?: unknown; message?: unknown };
  for (const candidate of [message, error]) if (typeof candidate === 'string' && candidate !== '') return candidate.slice(0, 200);
  return `request failed with status ${status}`;
}

/**
 * For routers the service does not write itself (the bull-board dashboard): rewrites any error they
 * answer into the API's error body, keeping the status. Responses already in that shape pass as they are.
 */
export const contractErrorBodies: RequestHandler = (_req, res, next) => {
  const send = res.send.bind(res);
  res.send = (body?: unknown) => {
    if (res.statusCode < 400 || isContractBody(typeof body === 'string' ? safeParse(body) : body)) return send(body);
    const status = res.statusCode;
    const code = CODE_BY_STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_REQUEST');
    res.type('application/json');
    return send(JSON.stringify({ error: { code, message: messageOf(body, status) } }));
  };
  next();
};

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
