import { collectDefaultMetrics, Registry } from 'prom-client';
import type { BatchResult } from './sync/batch.result';

/**
 * Prometheus helpers both services use. Each process (and each app a test builds) owns its own
 * registry rather than prom-client's global one, so two gateways in one test process never collide
 * on metric names and a scrape only ever shows the process it asked.
 */
export function createMetricsRegistry(service: 'gateway' | 'worker'): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/**
 * Seconds, from a fast cached read to a sync batch that waits behind others of its user; the top
 * buckets cover the default 30 s sync timeout.
 */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** `ok` when every op applied, `op_failed` when the batch stopped at a failing op (docs/SYNC-CLIENT.md, section 4). */
export type BatchOutcome = 'ok' | 'op_failed' | 'error';

export function batchOutcomeOf(result: BatchResult): BatchOutcome {
  return result.failed === null ? 'ok' : 'op_failed';
}

/** The text a scrape gets, with the content type Prometheus negotiates for it. */
export async function renderMetrics(registry: Registry): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
