import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { Change } from '../../../shared/protocol';
import { applyRemote, type DiskChanges } from './apply.remote';
import type { SyncContext } from './context';
import { STATE_DIR, type BaseNode, type RemoteNode } from './journal';
import { matchLocal, relinkMoved, type Matched } from './match';
import { unparkAll } from './parking';
import { isSafeId, localNameProblem } from './local.names';
import { pathIn } from './match';
import { flushOutbox, pushLocal } from './push.local';
import { baseName, freeConflictedName, loadIgnore, parentOf, scanLocal, type LocalScan } from './scan';

/**
 * Reads the change feed from the journal's cursor into the journal's remote tree. Answers how many
 * nodes of that tree it changed: none when the feed held only this device's own changes, which its
 * results had already brought to the journal.
 */
export async function pull(ctx: SyncContext): Promise<number> {
  const j = ctx.journal;
  let cursor = j.get('cursor');
  let changed = 0;
  for (;;) {
    const page = await ctx.session.authed(() => ctx.session.client.changes({ cursor, limit: 1000, signal: ctx.signal }));
    j.tx(() => {
      for (const c of page.items as Change[]) {
        // Echo suppression: this device's own change, already applied to the journal by its result.
        if (c.deviceId && c.deviceId === ctx.session.deviceId && (j.remoteRev(c.id) ?? 0) >= c.rev) continue;
        changed++;
        if (c.deleted) j.dropRemote(c.id);
        else {
          j.putRemote({
            id: c.id,
            parentId: c.parentId,
            name: c.name.normalize('NFC'),
            type: c.type,
            rev: c.rev,
            sha256: c.sha256 ?? '',
            size: c.size ?? 0,
          });
        }
      }
      j.set('cursor', page.cursor);
    });
    cursor = page.cursor;
    if (!page.hasMore) return changed;
  }
}

/**
 * Two local names equal after NFC: one is renamed to a conflicted copy before anything else. Of two
 * files, the one the journal knows (by inode) keeps the name, so that the synced file keeps its id
 * and its edits, and the newcomer is the copy; otherwise the second in name order is the copy.
 */
async function separateClashes(ctx: SyncContext, scan: LocalScan): Promise<boolean> {
  if (scan.clashes.length === 0) return false;
  const known = scan.stableInodes ? new Set([...ctx.journal.base().values()].map((b) => b.ino)) : new Set<number>();
  for (const clash of scan.clashes) {
    let e = clash;
    const first = scan.entries.get(clash.path);
    if (first && first.type === 'file' && clash.type === 'file' && known.has(clash.ino) && !known.has(first.ino)) {
      scan.entries.set(clash.path, clash);
      e = first;
    }
    const parent = parentOf(e.disk);
    const copy = await freeConflictedName(join(ctx.dir, parent), baseName(e.path), ctx.session.deviceName);
    const to = parent ? `${parent}/${copy}` : copy;
    await fs.rename(join(ctx.dir, e.disk), join(ctx.dir, to));
    ctx.reporter.line(`conflict: kept ${e.path} as ${to.normalize('NFC')}`);
    ctx.journal.addConflict(to.normalize('NFC'));
  }
  return scan.clashes.length > 0;
}

async function match(ctx: SyncContext, base: Map<string, BaseNode>, scan: LocalScan): Promise<Matched> {
  const matched = matchLocal(base, scan, ctx.ignored);
  await relinkMoved(ctx.dir, base, scan, matched);
  return matched;
}

/**
 * One pass: pull the feed, bring the server's changes to disk, then push the local ones. With
 * `diskUnchanged` (the watcher saw nothing since the last pass began, and that pass left nothing
 * to do again), the disk is as that pass left it: a feed that brings nothing new ends the pass
 * there, and one that does is applied to that pass's scan instead of a new one. A change the
 * watcher missed is found by the periodic scan (watch.ts); every download checks its place's
 * stat again before it replaces anything (apply.fetch.ts), and every deletion the file's bytes.
 */
export async function runPass(ctx: SyncContext, diskUnchanged = false): Promise<number> {
  const left = diskUnchanged ? ctx.lastScan : undefined;
  const quietBefore = ctx.pushedNothing === true;
  ctx.lastScan = undefined;
  ctx.pushedNothing = false;
  ctx.ignored = await loadIgnore(ctx.dir);
  ctx.pending = 0;
  if ((await pull(ctx)) === 0 && left) {
    ctx.lastScan = left;
    ctx.pushedNothing = quietBefore;
    return 0;
  }
  const j = ctx.journal;
  // Nodes a killed run parked in the middle of a swap go back before the scan looks for them.
  const unparked = await unparkAll(ctx.dir, j.base(), ctx.session.deviceName);
  const remote = j.remote();
  ctx.unplaceable = screenRemote(ctx, remote);
  let scan = left && unparked.length === 0 ? left : await scanLocal(ctx.dir, ctx.ignored);
  let actions = 0;
  if (await separateClashes(ctx, scan)) {
    actions++;
    scan = await scanLocal(ctx.dir, ctx.ignored);
  }
  const disk: DiskChanges = { landed: [], other: 0, forPush: 0 };
  // Neither the match nor the pull changes the copy of the base they are given.
  const before = j.base();
  const pulled = await applyRemote(ctx, remote, before, await match(ctx, before, scan), disk);
  await ctx.transfers.settle();
  // New files and folders placed were all the pull did in DIR: the scan takes them in. A write
  // meanwhile is an event of the watcher, or found by the next pass, which `--once` makes after any action.
  const onlyPlaced = disk.other === 0;
  if (onlyPlaced) for (const e of disk.landed) scan.entries.set(e.path, e);
  else scan = await scanLocal(ctx.dir, ctx.ignored);
  // The last pass's push found nothing on this very scan, and all this pull did was to place new files
  // and folders, each now its own base, leaving nothing for the push: a push would find nothing
  // again. Skipping it spares a device that receives many files a match of all of DIR per batch.
  const unchangedForPush = scan === left && onlyPlaced && disk.forPush === 0 && quietBefore;
  let pushed = 0;
  if (!unchangedForPush) {
    const base = j.base();
    pushed = await pushLocal(ctx, remote, base, await match(ctx, base, scan));
  }
  actions += pulled + pushed;
  // The push writes nothing in DIR: this is the disk as the pass leaves it.
  if (scan.clashes.length === 0) {
    ctx.lastScan = scan;
    ctx.pushedNothing = pushed === 0 && ctx.pending === 0;
  }
  return actions + ctx.pending;
}

/**
 * The server's nodes this disk cannot hold (a name too long in bytes, reserved or invalid here, or a
 * name the client keeps for itself) or whose id is not one: reported once a run as
 * `skipped: <path>: <why>`, and left alone on both sides. What is under them is left with them.
 */
export function screenRemote(ctx: SyncContext, remote: Map<string, RemoteNode>): Set<string> {
  const out = new Set<string>();
  const rules = { platform: process.platform, caseInsensitive: ctx.caseInsensitive };
  for (const rn of remote.values()) {
    const problem = localNameProblem(rn.name, rn.parentId === '', rules);
    const why = !isSafeId(rn.id) || (rn.parentId !== '' && !isSafeId(rn.parentId))
      ? 'its id is not 32 hex characters'
      : problem && `the name ${problem}`;
    if (!why) continue;
    out.add(rn.id);
    const path = pathIn(remote, rn.id) ?? rn.name;
    if (ctx.reported.has(`${rn.id} ${rn.name}`)) continue;
    ctx.reported.add(`${rn.id} ${rn.name}`);
    // eslint-disable-next-line no-control-regex
    const shown = path.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    ctx.reporter.line(`skipped: ${shown}: ${why}`);
  }
  return out;
}

/** Passes one `--once` run makes before it gives up on a folder that keeps changing under it. */
export const MAX_PASSES = 12;

/** One full reconciliation; false when the folder was still changing after MAX_PASSES passes. */
export async function syncOnce(ctx: SyncContext): Promise<boolean> {
  // Downloads a killed run left half-way are started again from their first byte.
  const tmp = join(ctx.dir, STATE_DIR, 'tmp');
  for (const name of await fs.readdir(tmp).catch(() => [] as string[])) await fs.rm(join(tmp, name), { force: true });
  await flushOutbox(ctx);
  let settled = false;
  for (let i = 0; i < MAX_PASSES && !ctx.signal.aborted && !settled; i++) settled = (await runPass(ctx)) === 0;
  if (settled) {
    await terminateStaleUploads(ctx);
    ctx.journal.set('last_sync', new Date().toISOString());
  }
  return settled;
}

/**
 * Once a run is in sync, no transfer is pending: an upload still in the journal is one a killed run
 * left for content that no longer needs it (the file changed again, was deleted, or became a
 * conflicted copy). The service would keep it, and the quota it reserved, until it expires; it is
 * terminated now. One that cannot be terminated (the service out of reach) is tried on a later run.
 */
async function terminateStaleUploads(ctx: SyncContext): Promise<void> {
  for (const u of ctx.journal.uploads()) {
    if (ctx.signal.aborted) return;
    try {
      await ctx.session.authed(() => ctx.session.client.terminateUpload(u.url, ctx.signal));
      ctx.journal.dropUpload(u.id);
    } catch {
      /* kept in the journal: terminated on a later run */
    }
  }
}
