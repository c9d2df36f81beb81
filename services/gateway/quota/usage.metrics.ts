import { Counter, Gauge, type Registry } from 'prom-client';
import { USAGE_KINDS } from '../../../shared/quota/usage.repository';
import type { QuotaObserver, QuotaRefusal } from '../../../shared/quota/quota.guard';
import type { UsageService } from './usage.service';

/**
 * Storage metrics: bytes stored by all users together per kind (read from the counters at scrape
 * time), and writes refused for the quota per reason. No per-user label: one series per user would
 * grow without bound.
 */
export function storageMetrics(registry: Registry, usage: Pick<UsageService, 'totals'>): QuotaObserver {
  new Gauge({
    name: 'filesync_stored_bytes',
    help: 'Bytes stored by all users together, by kind: files, trash, versions, uploads (reserved by unfinished resumable uploads)',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      this.reset();
      // With MySQL down the scrape still answers, without these series.
      const totals = await usage.totals().catch(() => undefined);
      if (!totals) return;
      for (const kind of USAGE_KINDS) this.set({ kind }, totals[kind]);
    },
  });
  const refusals = new Counter({
    name: 'filesync_quota_refusals_total',
    help: 'Writes refused with 507 QUOTA_EXCEEDED, by reason: declared_size (before the body was read), stored_bytes (at the commit or the reservation)',
    labelNames: ['reason'],
    registers: [registry],
  });
  for (const reason of ['declared_size', 'stored_bytes'] as QuotaRefusal[]) refusals.inc({ reason }, 0);
  return { refused: (reason) => refusals.inc({ reason }) };
}
