import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fmt, markdownTable } from './stats';

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Which package a frame belongs to: an npm package, Node itself, the service's own code, or V8's pseudo-frames. */
function categoryOf(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return 'node core';
  if (/\/dist\/(services|shared)\//.test(url)) return 'filesync code';
  return url;
}

/** Self time per package and per function of one .cpuprofile, idle excluded from the shares. */
export function summarizeProfile(profile: CpuProfile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
  }
  const categories = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    busy += us;
    const cat = categoryOf(url, functionName);
    categories.set(cat, (categories.get(cat) ?? 0) + us);
    const where = url ? `${url.replace(/^.*\/(node_modules|dist)\//, '')}:${lineNumber + 1}` : '';
    const key = `${functionName || '(anonymous)'} ${where}`.trim();
    functions.set(key, (functions.get(key) ?? 0) + us);
  }
  const top = (m: Map<string, number>, n: number) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, us]) => ({ name, ms: us / 1000, share: busy > 0 ? us / busy : 0 }));
  return { wallMs: (profile.endTime - profile.startTime) / 1000, busyMs: busy / 1000, idleMs: idle / 1000, categories: top(categories, 12), functions: top(functions, 15) };
}

/** Summaries of every profile --cpu-prof wrote under `dir` (each thread of the gateway's and the worker's). */
export async function summarizeProfiles(dir: string): Promise<{ markdown: string; data: unknown } | undefined> {
  // Each process's profiles are in a folder named after it (stack.ts), one per thread.
  const entries = await fs.readdir(dir, { recursive: true }).catch(() => [] as string[]);
  const files = entries.filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) return undefined;
  const parts: string[] = ['### CPU profiles (self time, idle excluded)'];
  const data: Record<string, unknown> = {};
  for (const file of files.sort()) {
    const summary = summarizeProfile(JSON.parse(await fs.readFile(path.join(dir, file), 'utf8')) as CpuProfile);
    data[file] = summary;
    parts.push(
      '',
      `${file}: ${fmt(summary.busyMs / 1000)} s on CPU of ${fmt(summary.wallMs / 1000)} s (${path.join(dir, file)})`,
      '',
      markdownTable(['package', 'self ms', 'share'], summary.categories.map((c) => [c.name, fmt(c.ms), `${fmt(c.share * 100, 1)}%`])),
      '',
      markdownTable(['function', 'self ms', 'share'], summary.functions.map((c) => [c.name, fmt(c.ms), `${fmt(c.share * 100, 1)}%`])),
    );
  }
  return { markdown: parts.join('\n'), data };
}
