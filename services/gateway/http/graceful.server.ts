import type { Server, ServerResponse } from 'node:http';

/**
 * Stops an HTTP server the graceful way: no new connections, requests in flight (slow uploads
 * included) run to their end, then their connections close. Plain `server.close()` only closes
 * keep-alive connections that are idle at that moment; one busy with a request would become idle
 * afterwards and hold the process for the whole keep-alive timeout, so responses written during
 * shutdown say `Connection: close` and connections are swept again as each response ends.
 */
export class GracefulServer {
  private readonly inFlight = new Set<ServerResponse>();
  private closing = false;

  constructor(private readonly server: Server) {
    server.on('request', (_req, res: ServerResponse) => {
      this.inFlight.add(res);
      if (this.closing && !res.headersSent) res.setHeader('Connection', 'close');
      res.once('close', () => {
        this.inFlight.delete(res);
        if (this.closing) setImmediate(() => server.closeIdleConnections());
      });
    });
  }

  /** Resolves 'drained' once every connection has ended, or 'forced' when the deadline cut them. */
  close(deadlineMs: number): Promise<'drained' | 'forced'> {
    this.closing = true;
    for (const res of this.inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
    return new Promise((resolve) => {
      let outcome: 'drained' | 'forced' = 'drained';
      const force = setTimeout(() => {
        outcome = 'forced';
        this.server.closeAllConnections();
      }, deadlineMs);
      force.unref();
      this.server.close(() => {
        clearTimeout(force);
        resolve(outcome);
      });
      this.server.closeIdleConnections();
    });
  }
}
