import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { BaseNode, RemoteNode } from './journal';
import { byDepth, type Matched } from './match';
import type { LiveTree } from './live.tree';
import { checkGuard, localSha, statOf, type SyncContext } from './context';

/** The deletion guard for the local side: unchanged local files the server deleted, counted before the pull touches anything. */
export function guardLocalDeletions(ctx: SyncContext, remote: Map<string, RemoteNode>, base: Map<string, BaseNode>, matched: Matched): void {
  let doomed = 0;
  let files = 0;
  for (const b of base.values()) {
    if (b.type !== 'file') continue;
    files++;
    if (!remote.has(b.id) && matched.local.has(b.id) && !matched.unknown.has(b.id)) doomed++;
  }
  checkGuard(ctx, 'local', doomed, files);
}

/**
 * The last step of the pull: what the server deleted goes here too, children first. A file edited
 * here since the base, or a folder still holding something, stays (the push sends it again); a node
 * whose place could not be read is left alone. Answers the number of deletions, and of nodes kept for the push.
 */
export async function applyDeletions(
  ctx: SyncContext,
  remote: Map<string, RemoteNode>,
  base: Map<string, BaseNode>,
  matched: Matched,
  live: LiveTree,
): Promise<{ deleted: number; kept: number }> {
  const j = ctx.journal;
  let actions = 0;
  let kept = 0;
  const full = (id: string) => join(ctx.dir, live.disk(id) ?? '');
  const gone = byDepth(base, [...base.keys()].filter((id) => !remote.has(id))).reverse();
  for (const id of gone) {
    if (ctx.signal.aborted) break;
    const b = base.get(id)!;
    if (matched.unknown.has(id)) continue;
    if (!live.get(id)) {
      j.dropBase(id);
      continue;
    }
    const path = live.path(id)!;
    if (b.type === 'file') {
      const entry = matched.local.get(id)?.entry;
      const st = await statOf(full(id));
      if (entry && st && (await localSha(ctx, { ...entry, disk: live.disk(id)!, ...st }, b)) === b.sha256) {
        await fs.rm(full(id), { force: true });
        live.remove(id);
        ctx.reporter.line(`deleted ${path}`);
        actions++;
      } else kept++;
      j.dropBase(id);
      continue;
    }
    try {
      await fs.rmdir(full(id));
      live.remove(id);
      ctx.reporter.line(`deleted ${path}/`);
      actions++;
    } catch {
      // Not empty: it stays, and is sent again with what it holds.
      kept++;
    }
    j.dropBase(id);
  }
  return { deleted: actions, kept };
}
