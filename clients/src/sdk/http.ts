import { AbortedError, ApiError, NetworkError } from './errors';
import { streamingGet, StreamedResponse } from './node.transport';

export interface RetryPolicy {
  /** Total time spent retrying 429, 503 and 5xx answers before the last error is thrown, in ms. */
  maxElapsedMs: number;
  /** The same for network errors (nothing answers): shorter, as an unreachable service rarely comes back at once. */
  maxNetworkElapsedMs: number;
  /** The first pause after a network error, doubled each time up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxElapsedMs: 60_000, maxNetworkElapsedMs: 10_000, baseDelayMs: 250, maxDelayMs: 5_000 };

export interface HttpRequest {
  method: string;
  path: string;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  body?: RequestInit['body'];
  /** Whether sending it twice does no harm: network errors and 5xx are then retried too. */
  idempotent: boolean;
  signal?: AbortSignal;
  /** A body that can only be sent once (a stream) makes the request not repeatable at all. */
  once?: boolean;
  /** `manual`: a 3xx answer is returned as it is (see `followRedirect`); default `follow`. */
  redirect?: 'follow' | 'manual' | 'error';
}

/** What the SDK reads of an answer: a fetch `Response`, or a StreamedResponse (node.transport.ts). */
export type Answer = Pick<Response, 'status' | 'ok' | 'headers' | 'url' | 'json'>;

/** One exchange, no retry: fetch, or node:http for a GET whose body is a large download. */
type Exchange<R extends Answer> = (url: URL, req: HttpRequest, headers: Record<string, string>) => Promise<R>;

const viaFetch: Exchange<Response> = (url, req, headers) =>
  fetch(url, { method: req.method, headers, body: req.body ?? null, signal: req.signal, redirect: req.redirect ?? 'follow', duplex: 'half' } as RequestInit);

/** A GET (its method and body are not looked at), its redirects left to the caller (`followRedirect`). */
export const viaNodeHttp: Exchange<StreamedResponse> = (url, req, headers) => streamingGet(url, headers, req.signal);

/** An answer's body not read, let go. */
async function discard(res: Answer): Promise<void> {
  if (res instanceof StreamedResponse) res.discard();
  else await (res as Response).body?.cancel().catch(() => undefined);
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortedError());
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError());
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

function retryAfterSeconds(res: Answer): number | undefined {
  const value = res.headers.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

export async function toApiError(res: Answer): Promise<ApiError> {
  let body: { error?: { code?: string; message?: string; details?: unknown } } | undefined;
  try {
    body = (await res.json()) as typeof body;
  } catch {
    body = undefined;
  }
  return new ApiError(res.status, body?.error as never, retryAfterSeconds(res));
}

/**
 * One HTTP exchange with the service, retried the way a client must: 429 and 503 after their
 * `Retry-After` (any request: the service did not act on it), network errors and other 5xx only
 * when the request is safe to repeat, all within the policy's time budget.
 */
export async function send(baseUrl: string, req: HttpRequest, token: () => string | undefined, policy?: RetryPolicy): Promise<Response>;
export async function send<R extends Answer>(baseUrl: string, req: HttpRequest, token: () => string | undefined, policy: RetryPolicy | undefined, exchange: Exchange<R>): Promise<R>;
export async function send(baseUrl: string, req: HttpRequest, token: () => string | undefined, policy: RetryPolicy = DEFAULT_RETRY, exchange: Exchange<Answer> = viaFetch): Promise<Answer> {
  const url = new URL(baseUrl.replace(/\/+$/, '') + '/v1' + req.path);
  for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
  const started = Date.now();
  let delay = policy.baseDelayMs;
  for (;;) {
    const headers: Record<string, string> = { ...req.headers };
    const bearer = token();
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    let res: Answer | undefined;
    let failure: Error;
    try {
      res = await exchange(url, req, headers);
      if (res.ok || (res.status >= 300 && res.status < 400)) return res;
      failure = await toApiError(res);
    } catch (err) {
      if (req.signal?.aborted) throw new AbortedError();
      failure = new NetworkError(`cannot reach ${url.origin}: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`, err);
    }
    const status = res?.status;
    const retryable =
      !req.once &&
      (status === 429 || status === 503 || (req.idempotent && (status === undefined || status === 500 || status === 502 || status === 504)));
    const elapsed = Date.now() - started;
    const budget = status === undefined ? policy.maxNetworkElapsedMs : policy.maxElapsedMs;
    if (!retryable || elapsed >= budget) throw failure;
    const hinted = failure instanceof ApiError && failure.retryAfter !== undefined ? failure.retryAfter * 1000 : undefined;
    const pause = Math.min(hinted ?? delay, budget - elapsed, 30_000);
    delay = Math.min(delay * 2, policy.maxDelayMs);
    await sleep(Math.max(pause, 50), req.signal);
  }
}

export async function readJson<T>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Follows the redirects of a GET answered with `redirect: 'manual'` (S3_DOWNLOADS=redirect: content served
 * from the store by a presigned URL on another origin, docs/ARCHITECTURE.md "Content on S3"). The Authorization header goes only to the
 * service's own origin, never to another. At most 5 hops.
 */
export async function followRedirect(res: Response, serviceOrigin: string, token: string | undefined, signal?: AbortSignal): Promise<Response>;
export async function followRedirect<R extends Answer>(res: R, serviceOrigin: string, token: string | undefined, signal: AbortSignal | undefined, exchange: Exchange<R>): Promise<R>;
export async function followRedirect(res: Answer, serviceOrigin: string, token: string | undefined, signal?: AbortSignal, exchange: Exchange<Answer> = viaFetch): Promise<Answer> {
  let current = res;
  for (let hop = 0; REDIRECTS.has(current.status); hop++) {
    const location = current.headers.get('location');
    if (!location || hop >= 5) throw new ApiError(502, { code: 'INTERNAL', message: `redirect without a usable Location (HTTP ${current.status})` });
    const target = new URL(location, current.url);
    await discard(current);
    const headers: Record<string, string> = {};
    if (token && target.origin === serviceOrigin) headers.authorization = `Bearer ${token}`;
    try {
      current = await exchange(target, { method: 'GET', path: '', idempotent: true, signal, redirect: 'manual' }, headers);
    } catch (err) {
      if (signal?.aborted) throw new AbortedError();
      throw new NetworkError(`cannot reach ${target.origin}: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`, err);
    }
    if (!current.ok && !REDIRECTS.has(current.status)) throw await toApiError(current);
  }
  return current;
}
