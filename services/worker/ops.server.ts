import http from 'node:http';
import type { Worker } from 'bullmq';
import type { Db } from '../../shared/db/knex';
import type { Logger } from '../../shared/logger';

/**
 * The worker's own health endpoints. Several workers may share a host: when the port is taken the
 * worker runs on without them and says so.
 */
export async function startOpsServer(port: number, db: Db, workers: Worker[], logger: Logger): Promise<http.Server | undefined> {
  const server = http.createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/healthz') return send(200, { status: 'ok' });
    if (req.url === '/readyz') {
      const mysql = await db.raw('SELECT 1').then(
        () => true,
        () => false,
      );
      const redis = workers.every((w) => w.isRunning());
      if (mysql && redis) return send(200, { status: 'ready', mysql, redis });
      return send(503, { error: { code: 'SERVICE_UNAVAILABLE', message: 'a dependency does not answer', details: { mysql, redis } } });
    }
    return send(404, { error: { code: 'NOT_FOUND', message: 'no such route' } });
  });
  return new Promise((resolve) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      logger.warn({ port, err: err.code ?? err.message }, 'worker health port unavailable; running without it');
      resolve(undefined);
    });
    server.listen(port, () => resolve(server));
  });
}
