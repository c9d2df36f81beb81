import type { Attempt } from './device';

export interface FaultEvent {
  name: string;
  at: number;
  /** When the fault ended (SIGCONT); `at` for instant faults. */
  endAt: number;
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const ms = (n: number) => (Number.isNaN(n) ? 'n/a' : `${Math.round(n)} ms`);

/**
 * Recovery per fault: from the fault until every device has had a batch answered 200 that it sent
 * after the fault. Isolation during a freeze: latency of the devices the frozen worker did not hold
 * (those with no answer pending for more than 2 s across the SIGSTOP), against the calm start.
 */
export function latencyReport(attempts: Attempt[], faults: FaultEvent[], started: number): string[] {
  const lines: string[] = [];
  const devices = [...new Set(attempts.map((a) => a.device))];
  lines.push('recovery per fault (until every device had a new batch answered 200):');
  for (const f of faults) {
    let worst = 0;
    let slowest = -1;
    for (const d of devices) {
      const first = attempts.filter((a) => a.device === d && a.status === 200 && a.sentAt >= f.at).sort((a, b) => a.answeredAt - b.answeredAt)[0];
      const t = first ? first.answeredAt - f.at : Number.POSITIVE_INFINITY;
      if (t > worst) {
        worst = t;
        slowest = d;
      }
    }
    const retried = attempts.filter((a) => a.status !== 200 && a.sentAt >= f.at - 15_000 && a.sentAt <= f.endAt + 15_000).length;
    lines.push(`  ${f.name}: ${ms(worst)} (slowest device ${slowest}); non-200 answers around it: ${retried}`);
  }

  const firstFault = faults[0]?.at ?? Number.POSITIVE_INFINITY;
  const calm = attempts.filter((a) => a.status === 200 && a.sentAt >= started + 3000 && a.answeredAt < firstFault).map((a) => a.answeredAt - a.sentAt);
  lines.push(`calm latency (200s before the first fault): p50 ${ms(percentile(calm, 50))}, p99 ${ms(percentile(calm, 99))}, n=${calm.length}`);
  for (const f of faults.filter((x) => x.name.startsWith('SIGSTOP'))) {
    const held = new Set(attempts.filter((a) => a.sentAt < f.at && a.answeredAt > f.at + 2000).map((a) => a.device));
    const others = attempts
      .filter((a) => !held.has(a.device) && a.status !== -1 && a.sentAt >= f.at && a.sentAt <= f.endAt)
      .map((a) => a.answeredAt - a.sentAt);
    const heldLatency = attempts.filter((a) => held.has(a.device) && a.sentAt < f.at && a.answeredAt > f.at).map((a) => a.answeredAt - a.sentAt);
    const ratio = percentile(others, 99) / percentile(calm, 99);
    lines.push(
      `during the 25 s SIGSTOP: ${held.size} device(s) held by the frozen worker (their waits: ${heldLatency.map(ms).join(', ') || 'none'}); ` +
        `other devices p50 ${ms(percentile(others, 50))}, p99 ${ms(percentile(others, 99))} (n=${others.length}), ${ratio.toFixed(2)}x the calm p99 (goal: within 2x)`,
    );
  }
  return lines;
}
