/** Latency summaries, ratios and the markdown tables the bench prints. */

export interface LatencySummary {
  n: number;
  mean: number;
  p50: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentile of an ascending array (p in 0..100). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function summarize(samples: number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((s, v) => s + v, 0);
  return {
    n: sorted.length,
    mean: sorted.length ? sum / sorted.length : NaN,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
  };
}

/** Milliseconds since `start` (a process.hrtime.bigint() reading). */
export const msSince = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;

export const now = (): bigint => process.hrtime.bigint();

/**
 * One measured figure beside the ceilings measured for it in the same run. `ratio` is always
 * service ÷ ceiling: for a rate, the share of the ceiling reached (1 = at the ceiling); for a time or
 * a size, how many times the ceiling it costs (1 = as cheap as the ceiling).
 */
export interface Figure {
  scenario: string;
  case: string;
  metric: string;
  unit: string;
  value: number;
  kind: 'rate' | 'time' | 'size';
  ceilings: Array<{ name: string; value: number; ratio: number }>;
}

export function figure(
  scenario: string,
  kase: string,
  metric: string,
  unit: string,
  kind: Figure['kind'],
  value: number,
  ceilings: Array<{ name: string; value: number }> = [],
): Figure {
  return {
    scenario,
    case: kase,
    metric,
    unit,
    kind,
    value,
    ceilings: ceilings.map((c) => ({ ...c, ratio: c.value > 0 ? value / c.value : NaN })),
  };
}

/** A scenario's printed result: its own table, plus what it learnt about where the time goes. */
export interface ScenarioReport {
  name: string;
  title: string;
  headers: string[];
  rows: string[][];
  notes: string[];
  figures: Figure[];
  /** Further tables that explain the figures (where the time goes). */
  extraTables?: Array<{ title: string; headers: string[]; rows: string[][] }>;
  /** Anything else worth keeping in the JSON (explanations, raw samples, error counts). */
  details: Record<string, unknown>;
}

export function fmt(value: number, digits?: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  const d = digits ?? (Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2);
  return value.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
}

/** A rate as a share of its ceiling ("42%"), a time or size as a multiple of it ("3.1x"). */
export function fmtRatio(service: number, ceiling: number, kind: Figure['kind']): string {
  if (!(ceiling > 0) || !Number.isFinite(service)) return 'n/a';
  const r = service / ceiling;
  return kind === 'rate' ? `${fmt(r * 100, r * 100 >= 10 ? 0 : 1)}%` : `${fmt(r, r >= 10 ? 0 : 1)}x`;
}

export function fmtBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${fmt(bytes / (1024 * 1024))} MiB`;
  if (bytes >= 1024) return `${fmt(bytes / 1024)} KiB`;
  return `${bytes} B`;
}

export function markdownTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(headers), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

export function renderReport(report: ScenarioReport): string {
  const parts = [`### ${report.title}`, '', markdownTable(report.headers, report.rows)];
  if (report.notes.length > 0) parts.push('', ...report.notes.map((n) => `- ${n}`));
  for (const t of report.extraTables ?? []) parts.push('', `${t.title}:`, '', markdownTable(t.headers, t.rows));
  return parts.join('\n');
}
