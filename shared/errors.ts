import { ERROR_CODES, type ErrorBody, type ErrorCode } from './protocol';

/** The codes, their statuses and the error body are the API's (shared/protocol). */
export type { ErrorBody, ErrorCode };

/** The one error type the services throw on purpose; anything else is reported as INTERNAL. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;
  /** Overrides the catalogue status, for the few places the API answers with another (413 on JSON). */
  readonly status: number;
  /** Seconds for a Retry-After header. */
  readonly retryAfter: number | undefined;

  constructor(code: ErrorCode, message: string, options: { details?: unknown; status?: number; retryAfter?: number } = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = options.details;
    this.status = options.status ?? ERROR_CODES[code];
    this.retryAfter = options.retryAfter ?? (code === 'SERVICE_UNAVAILABLE' ? 1 : undefined);
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { code: this.code, message: this.message };
    if (this.details !== undefined) body.details = this.details;
    return body;
  }
}

export const invalid = (message: string, details?: unknown) => new AppError('INVALID_REQUEST', message, { details });
export const notFound = (message = 'not found') => new AppError('NOT_FOUND', message);
export const nameConflict = (message = 'a sibling with that name already exists') => new AppError('NAME_CONFLICT', message);
export const preconditionFailed = (message: string, details?: unknown) => new AppError('PRECONDITION_FAILED', message, { details });
/** Content over MAX_UPLOAD_BYTES, in the one wording every upload path uses. */
export const tooLarge = (limitBytes: number) => new AppError('FILE_TOO_LARGE', `the content is larger than the upload limit (${limitBytes} bytes)`);
export const unavailable = (message: string, retryAfter = 1) => new AppError('SERVICE_UNAVAILABLE', message, { retryAfter });

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}
