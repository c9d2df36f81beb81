import http, { type RequestListener, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError } from '../../../shared/errors';
import { StallGuard } from './stall.guard';

export interface HttpServerOptions {
  /** Time allowed to receive a request's headers (Node's default: 60 s). */
  headersTimeoutMs?: number;
  /** Time allowed to receive a whole request, body included (Node's default: 300 s). */
  requestTimeoutMs?: number;
  /** How often Node looks for requests over those times (Node's default: 30 s). */
  timeoutCheckMs?: number;
  /** A response whose reader takes no byte for this long is closed (stall.guard.ts); 0 turns it off. */
  stallTimeoutMs?: number;
}

/** What Node's parser reports, in the API's error codes. Anything unlisted is a malformed request. */
function clientErrorOf(code: string | undefined): AppError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('INVALID_REQUEST', 'request headers are too large', { status: 431 });
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('INVALID_REQUEST', 'the request was not received in time', { status: 408 });
    case 'HPE_INVALID_METHOD':
      return new AppError('INVALID_REQUEST', 'unknown HTTP method');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new AppError('INVALID_REQUEST', 'chunk extensions are too large', { status: 413 });
    default:
      return new AppError('INVALID_REQUEST', 'malformed HTTP request');
  }
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 413: 'Payload Too Large', 431: 'Request Header Fields Too Large' };

/**
 * Answers what Node's HTTP parser refuses before any route sees it (oversized headers, a request
 * timeout, an unknown method, a malformed request line) with the API's JSON error body instead
 * of Node's bare status line. Like Node's own handler, it writes only while no response has started
 * on the connection, and then closes it.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // A response already partly written on this connection cannot be followed by another one.
  const conn = socket as Duplex & { _httpMessage?: unknown; bytesWritten?: number };
  const midResponse = Boolean(conn._httpMessage) && (conn.bytesWritten ?? 0) > 0;
  if (err.code === 'ECONNRESET' || !socket.writable || midResponse) {
    socket.destroy();
    return;
  }
  const error = clientErrorOf(err.code);
  const body = JSON.stringify({ error: error.toBody() });
  socket.end(
    `HTTP/1.1 ${error.status} ${REASONS[error.status] ?? 'Bad Request'}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
  // A peer that never reads must not hold the socket.
  setTimeout(() => socket.destroy(), 5000).unref();
}

/**
 * The gateway's HTTP server: the app plus the parser-level error answers above. main.ts and the test
 * harness both build their server here, so tests exercise what runs in production.
 */
export function createHttpServer(app: RequestListener, options: HttpServerOptions = {}): Server {
  const server = http.createServer(
    {
      ...(options.headersTimeoutMs !== undefined && { headersTimeout: options.headersTimeoutMs }),
      ...(options.requestTimeoutMs !== undefined && { requestTimeout: options.requestTimeoutMs }),
      ...(options.timeoutCheckMs !== undefined && { connectionsCheckingInterval: options.timeoutCheckMs }),
    },
    app,
  );
  // Longer than the idle timeout of common load balancers (60 s), so they close first.
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError);
  if (options.stallTimeoutMs) new StallGuard(server, options.stallTimeoutMs);
  return server;
}

/** Listens on `port` (0: the OS picks) and resolves once bound. */
export function listen(server: Server, port: number, host?: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
