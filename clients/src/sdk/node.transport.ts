import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { AbortedError } from './errors';

/**
 * An answer read through Node's own HTTP client rather than `fetch`: the body is the response
 * stream itself, in Node Buffers. A large download is bound by how fast its body is taken in, and
 * fetch's web stream costs about twice Node's per byte (a 256 MiB download received in 400-850 ms
 * through fetch, 250-400 ms through node:http, docs/BENCHMARKS.md "Downloads through node:http").
 * It answers what the SDK reads of a `Response`.
 */
export class StreamedResponse {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: Headers;

  constructor(
    readonly url: string,
    readonly body: IncomingMessage,
  ) {
    this.status = body.statusCode ?? 0;
    this.ok = this.status >= 200 && this.status < 300;
    this.headers = new Headers();
    for (const [name, value] of Object.entries(body.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) this.headers.append(name, v);
    }
  }

  async json(): Promise<unknown> {
    const parts: Buffer[] = [];
    for await (const part of this.body) parts.push(part as Buffer);
    return JSON.parse(Buffer.concat(parts).toString('utf8'));
  }

  /** Drops the rest of the body (an answer not read: a redirect, an error). */
  discard(): void {
    this.body.destroy();
  }
}

/**
 * Nothing at all for this long, before the answer or between two pieces of its body, ends the
 * exchange as a network failure: the limit fetch applies (undici's header and body timeouts).
 */
export const IDLE_TIMEOUT_MS = 300_000;

/** One GET through node:http(s); no redirect followed, no retry (http.ts `send` does those). */
export function streamingGet(url: URL, headers: Record<string, string>, signal?: AbortSignal, idleMs = IDLE_TIMEOUT_MS): Promise<StreamedResponse> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortedError());
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(url, { method: 'GET', headers, signal }, (res) => resolve(new StreamedResponse(url.href, res)));
    req.setTimeout(idleMs, () => req.destroy(new Error(`nothing received for ${idleMs / 1000} s`)));
    req.once('error', reject);
    req.end();
  });
}
