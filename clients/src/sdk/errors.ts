import type { ErrorBody, ErrorCode } from '../../../shared/protocol';

/** An error answer of the service, typed by its contract code. */
export class ApiError extends Error {
  readonly code: ErrorCode | string;
  readonly status: number;
  readonly details: unknown;
  /** Seconds from `Retry-After`, when the answer carried one. */
  readonly retryAfter: number | undefined;

  constructor(status: number, body: Partial<ErrorBody> | undefined, retryAfter?: number) {
    super(body?.message ?? `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = body?.code ?? (status >= 500 ? 'INTERNAL' : 'INVALID_REQUEST');
    this.details = body?.details;
    this.retryAfter = retryAfter;
  }

  is(code: ErrorCode): boolean {
    return this.code === code;
  }
}

/** The service could not be reached (refused, reset, DNS, timeout) after the retries. */
export class NetworkError extends Error {
  constructor(message: string, override readonly cause?: unknown) {
    super(message);
    this.name = 'NetworkError';
  }
}

/** The request was aborted by its AbortSignal. */
export class AbortedError extends Error {
  constructor() {
    super('aborted');
    this.name = 'AbortedError';
  }
}

export const isApiError = (err: unknown, code?: ErrorCode): err is ApiError =>
  err instanceof ApiError && (code === undefined || err.code === code);
