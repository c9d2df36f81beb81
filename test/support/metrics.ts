/**
 * Reads Prometheus text output: the sum of every sample of `name` whose labels include `labels`
 * (0 when there is none), so a test can compare a counter before and after an action.
 */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const match = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) found[key!] = value!;
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) sum += Number(match[3]);
  }
  return sum;
}

/** Whether any sample of `name` carries all of `labels`. */
export function hasSeries(text: string, name: string, labels: Record<string, string> = {}): boolean {
  return text.split('\n').some((line) => {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) return false;
    return Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
  });
}
