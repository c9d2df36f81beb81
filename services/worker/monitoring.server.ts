import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Worker } from 'bullmq';
import type { Registry } from 'prom-client';
import { databaseAnswers, type Db } from '../../shared/db/knex';
import type { Logger } from '../../shared/logger';
import { renderMetrics } from '../../shared/metrics';

/**
 * The worker's own monitoring endpoints: /healthz, /readyz and /metrics. Several workers may share
 * a host: when the port is taken the worker runs on without them and says so.
 */
export async function startMonitoringServer(
  port: number,
  db: Db,
  workers: Worker[],
  logger: Logger,
  registry: Registry,
  host?: string,
): Promise<http.Server | undefined> {
  const server = http.createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(404, { error: { code: 'NOT_FOUND', message: 'no such route' } });
    if (path === '/healthz') return send(200, { status: 'ok' });
    if (path === '/readyz') {
      const mysql = await databaseAnswers(db);
      const redis = workers.every((w) => w.isRunning());
      if (mysql && redis) return send(200, { status: 'ready', mysql, redis });
      res.setHeader('Retry-After', '5');
      return send(503, { error: { code: 'SERVICE_UNAVAILABLE', message: 'a dependency does not answer', details: { mysql, redis } } });
    }
    if (path === '/metrics') {
      try {
        const { contentType, body } = await renderMetrics(registry);
        res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
        res.end(body);
      } catch (err) {
        logger.warn({ err: (err as Error).message }, 'metrics could not be collected');
        send(500, { error: { code: 'INTERNAL', message: 'metrics could not be collected' } });
      }
      return;
    }
    return send(404, { error: { code: 'NOT_FOUND', message: 'no such route' } });
  });
  return new Promise((resolve) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      logger.warn({ port, err: err.code ?? err.message }, 'worker monitoring port unavailable; running without /healthz, /readyz and /metrics');
      resolve(undefined);
    });
    server.listen(port, host, () => {
      logger.info({ port: (server.address() as AddressInfo).port }, 'worker monitoring endpoints listening');
      resolve(server);
    });
  });
}
