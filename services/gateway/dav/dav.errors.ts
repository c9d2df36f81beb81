import { isAppError } from '../../../shared/errors';

/** RFC 4918 status lines the service answers with. */
export const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  207: 'Multi-Status',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  416: 'Range Not Satisfiable',
  423: 'Locked',
  424: 'Failed Dependency',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  507: 'Insufficient Storage',
};

export const statusLine = (status: number): string => `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? ''}`.trimEnd();

/**
 * The condition of a 507 that a limit of the service (not the quota) refuses: the limits on locks
 * and dead properties (docs/WEBDAV.md). RFC 4918 names no element for them, so it is ours.
 */
export const LIMIT_CONDITION = 'fs:limit-exceeded';

/**
 * A WebDAV answer other than success. `condition` names the RFC 4918 precondition or postcondition
 * element (in DAV:, or prefixed when it is ours) the body carries; `hrefs` go inside it (the lock roots of lock-token-submitted).
 */
export class DavError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly condition?: string,
    readonly hrefs: string[] = [],
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'DavError';
  }
}

/** The status an error of the API's catalogue gets over WebDAV (RFC 4918 section 9 for each method). */
export function toDavError(err: unknown): DavError | undefined {
  if (err instanceof DavError) return err;
  if (!isAppError(err)) return undefined;
  const code = err.code as string;
  switch (code) {
    case 'NOT_FOUND':
      return new DavError(404, err.message);
    case 'NAME_CONFLICT':
      return new DavError(409, err.message);
    case 'INVALID_REQUEST':
      return new DavError(err.status === 416 ? 416 : err.status === 413 ? 413 : 400, err.message);
    case 'FILE_TOO_LARGE':
      return new DavError(413, err.message);
    case 'PRECONDITION_FAILED':
      return new DavError(412, err.message);
    case 'FORBIDDEN':
      return new DavError(403, err.message);
    case 'UNAUTHORIZED':
      return new DavError(401, err.message);
    case 'RATE_LIMITED':
      return new DavError(429, err.message, undefined, [], err.retryAfter ?? 60);
    case 'SERVICE_UNAVAILABLE':
      return new DavError(503, err.message, undefined, [], err.retryAfter ?? 1);
    // The quota engine's refusal (API 1.3): RFC 4331 names 507 with quota-not-exceeded.
    case 'QUOTA_EXCEEDED':
      return new DavError(507, err.message, 'quota-not-exceeded');
  }
  return undefined;
}
