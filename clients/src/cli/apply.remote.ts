import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { BaseNode, RemoteNode } from './journal';
import { byDepth, foldersWithUnseen, pathIn, remoteChanged, type Matched } from './match';
import { LiveTree } from './live.tree';
import { localSha, skipFailed, statOf, toBase, type SyncContext } from './context';
import { applyDeletions, guardLocalDeletions } from './apply.deletions';
import { conflictedName, freeConflictedName, joinPath, type LocalEntry } from './scan';
import { park, PARKING, unparkAll } from './parking';
import { RemoteFetcher, type Fetch } from './apply.fetch';
import { FolderMaker } from './apply.folders';
import { BULK_FILE_MAX } from './bulk.transfers';

const exists = async (full: string) => (await statOf(full)) !== undefined;

/** What a pull did in DIR: new files and folders placed, as a scan would read them, and how many other changes. */
export interface DiskChanges {
  landed: LocalEntry[];
  /** Moves, renames, deletions, copies set aside, files replaced: only a new scan says what is there. */
  other: number;
  /** Nodes the pull left for the push to send: kept here where the server deleted them, or changed here where the server changed them otherwise. */
  forPush: number;
}

/**
 * The pull half of a pass: brings every change the server holds beyond the merge base to disk.
 * Local changes are left for the push half, except where both sides changed the same thing: then
 * the server's version (accepted first) keeps the place and the local one is kept as a conflicted
 * copy. Answers the number of actions taken, and tells `disk` what they did there.
 */
export async function applyRemote(
  ctx: SyncContext,
  remote: Map<string, RemoteNode>,
  base: Map<string, BaseNode>,
  matched: Matched,
  disk?: DiskChanges,
): Promise<number> {
  const live = new LiveTree(matched);
  const parkedFrom = new Map<string, string>();
  try {
    return await applyChanges(ctx, remote, base, matched, live, parkedFrom, disk);
  } finally {
    // A node parked for a swap whose other half could not be done goes back where it was.
    await unparkAll(ctx.dir, base, ctx.session.deviceName, parkedFrom);
  }
}

async function applyChanges(
  ctx: SyncContext,
  remote: Map<string, RemoteNode>,
  base: Map<string, BaseNode>,
  matched: Matched,
  live: LiveTree,
  parkedFrom: Map<string, string>,
  disk: DiskChanges | undefined,
): Promise<number> {
  const j = ctx.journal;
  const r = ctx.reporter;
  let actions = 0;
  const full = (id: string) => join(ctx.dir, live.disk(id) ?? '');
  // The scanned entry of a node at the place the pass has moved it to.
  const entryOf = (id: string) => {
    const e = matched.local.get(id)!.entry;
    return { ...e, disk: live.disk(id) ?? e.disk };
  };

  // The guard counts first, before anything is applied.
  guardLocalDeletions(ctx, remote, base, matched);

  // Renames into conflicted copies and parking, whether or not the step they serve is counted as an action.
  let setAside = 0;
  let forPush = 0;
  const folders = new FolderMaker(ctx, live);
  const keepAsCopy = async (id: string): Promise<string | undefined> => {
    const node = live.get(id);
    if (!node) return undefined;
    const from = live.disk(id)!;
    const parentDisk = live.disk(node.parentId) ?? '';
    const copy = await freeConflictedName(join(ctx.dir, parentDisk), node.name, ctx.session.deviceName);
    setAside++;
    await fs.rename(join(ctx.dir, from), join(ctx.dir, parentDisk, copy));
    live.set(id, node.parentId, copy, node.type);
    const copyPath = live.path(id)!;
    r.line(`conflict: kept ${live.path(node.parentId) ? `${live.path(node.parentId)}/` : ''}${node.name} as ${copyPath}`);
    j.addConflict(copyPath);
    return copyPath;
  };

  // A local item that took a name by a local create or move (not yet sent) gives it up to the server's.
  const yieldsName = async (id: string): Promise<boolean> => {
    const l = matched.local.get(id);
    const b = base.get(id);
    if (!l || l.parentId !== live.get(id)?.parentId || l.name !== live.get(id)?.name) return false;
    return l.isNew || (b !== undefined && (b.parentId !== l.parentId || b.name !== l.name));
  };

  // A node the server also moves away from the name another one needs (a swap) leaves it first.
  const movedThere = (id: string): boolean => {
    const ro = remote.get(id);
    const here = live.get(id);
    return ro !== undefined && here !== undefined && base.has(id) && !matched.unknown.has(id) && !parkedFrom.has(id) && (ro.parentId !== here.parentId || ro.name !== here.name);
  };
  const PARKED = '\0parked';
  const parkNode = async (id: string): Promise<void> => {
    const node = live.get(id)!;
    const disk = live.disk(id)!;
    setAside++;
    await park(ctx.dir, disk, id);
    parkedFrom.set(id, disk);
    if (!live.has(PARKED)) live.set(PARKED, '', PARKING, 'folder', PARKING);
    live.set(id, PARKED, id, node.type, id);
  };
  const placeOf = (id: string) => (parkedFrom.has(id) ? parkedFrom.get(id)!.normalize('NFC') : live.path(id)!);

  // On a case-insensitive disk, a server name that differs only in case from a sibling's is renamed
  // on the server to a conflicted copy (the second one keeps both), then comes down under that name.
  const caseClash = async (rn: RemoteNode): Promise<boolean> => {
    if (!ctx.caseInsensitive) return false;
    const other = live.childFolded(rn.parentId, rn.name);
    if (other === undefined || other === rn.id || live.get(other)?.name === rn.name) return false;
    const copy = conflictedName(rn.name, ctx.session.deviceName);
    const res = await ctx.session.authed(() =>
      ctx.session.client.syncOps([{ opId: j.nextOpId(), type: 'update', resourceId: rn.id, baseRev: rn.rev, payload: { name: copy } }], ctx.signal),
    );
    const parent = live.path(rn.parentId);
    if (res.failed === null) {
      r.line(`conflict: kept ${parent ? `${parent}/` : ''}${rn.name} as ${parent ? `${parent}/` : ''}${copy}`);
      j.addConflict(parent ? `${parent}/${copy}` : copy);
    }
    ctx.pending++;
    return true;
  };

  const fetcher = new RemoteFetcher(ctx, live, remote);
  const download = (node: RemoteNode, target: string, expect: { mtimeMs: number; size: number } | undefined, local?: { path: string; sha256: string }) =>
    fetcher.download(node, target, expect, local);

  const unseen = foldersWithUnseen(remote, base);
  const fresh: Fetch[] = [];
  const replaced: Fetch[] = [];
  for (const id of byDepth(remote)) {
    if (ctx.signal.aborted) break;
    if (ctx.unplaceable.has(id)) continue;
    const rn = remote.get(id)!;
    try {
      const b = base.get(id);
      if (b && !remoteChanged(rn, b)) {
        if (b.rev !== rn.rev) j.putBase({ ...b, rev: rn.rev, size: b.size });
        // A folder deleted here while the server put something new in it comes back to hold that.
        const back = rn.type === 'folder' && !live.has(id) && unseen.has(id) && !matched.unknown.has(id) && live.has(rn.parentId);
        if (!back) continue;
        const target = join(ctx.dir, live.disk(rn.parentId)!, rn.name);
        // Its name taken here by a local create or move not yet sent: that one yields, kept as a conflicted copy.
        const occupant = live.childNamed(rn.parentId, rn.name);
        if (occupant !== undefined && (!(await yieldsName(occupant)) || (await keepAsCopy(occupant)) === undefined)) continue;
        if (await exists(target)) continue;
        await folders.make(rn, target);
        actions++;
        continue;
      }
      if (matched.unknown.has(id) || !live.has(rn.parentId)) continue;
      const parentPath = live.path(rn.parentId)!;
      const targetPath = joinPath(parentPath, rn.name);
      if (ctx.ignored(targetPath, rn.type === 'folder')) continue;
      const target = join(ctx.dir, live.disk(rn.parentId)!, rn.name);
      const here = live.get(id);

      if (b && here) {
        // Place: the server's move wins over a local one.
        if (here.parentId !== rn.parentId || here.name !== rn.name) {
          if (await caseClash(rn)) continue;
          const occupant = live.childNamed(rn.parentId, rn.name);
          if (occupant !== undefined && occupant !== id) {
            // Something new here, or moved here, holds the name the server gave first: it yields.
            if (await yieldsName(occupant)) {
              if ((await keepAsCopy(occupant)) === undefined) continue;
            } else if (movedThere(occupant)) await parkNode(occupant);
            else continue;
            actions++;
          }
          const from = placeOf(id);
          const moved = (parkedFrom.has(id) ? (base.get(id)?.parentId ?? '') : here.parentId) !== rn.parentId;
          await fs.rename(full(id), target);
          live.set(id, rn.parentId, rn.name, rn.type);
          parkedFrom.delete(id);
          r.line(`${moved ? 'moved' : 'renamed'} ${from} -> ${targetPath}`);
          actions++;
        }
        let stat = await statOf(full(id));
        if (rn.type === 'file' && rn.sha256 !== b.sha256) {
          const entry = entryOf(id);
          const mine = await localSha(ctx, entry, b);
          if (mine !== b.sha256 && mine !== rn.sha256) {
            if ((await keepAsCopy(id)) === undefined) continue;
            live.set(id, rn.parentId, rn.name, 'file');
            if (rn.sha256) await download(rn, target, undefined);
            actions++;
            continue;
          }
          if (mine === b.sha256 && rn.sha256) {
            // The new bytes replace the file where it is: under its own spelling on disk (an NFD name
            // stays NFD), never beside it under the NFC one, which would make two files of one name.
            // A small one comes after the walk with the others, many to a response.
            const at = full(id);
            if (rn.size <= BULK_FILE_MAX) replaced.push({ node: rn, target: at, expect: entry });
            else if (await download(rn, at, entry, { path: at, sha256: b.sha256 })) actions++;
            continue;
          }
          if (!rn.sha256) continue;
          stat = await statOf(full(id));
        }
        const contentSame = rn.type === 'folder' || (stat !== undefined && (await localSha(ctx, { ...entryOf(id), ...stat }, b)) === rn.sha256);
        j.putBase(contentSame ? toBase(rn, stat) : { ...toBase(rn, undefined), sha256: b.sha256, size: b.size });
        if (!contentSame) forPush++;
        continue;
      }

      if (b && !here) {
        if (rn.type === 'file' && rn.sha256 === b.sha256) {
          // Deleted here, only moved there: the deletion is pushed with the server's latest rev.
          j.putBase({ ...b, parentId: rn.parentId, name: rn.name, rev: rn.rev });
          forPush++;
          continue;
        }
        j.dropBase(id);
      }

      // New on the server (or to be brought back: an edit there wins over a deletion here).
      if (await caseClash(rn)) continue;
      const sameName = live.childNamed(rn.parentId, rn.name);
      if (sameName !== undefined) {
        let mine = matched.local.get(sameName);
        const goneThere = mine && !mine.isNew && !remote.has(sameName) && base.has(sameName);
        if (goneThere && mine!.entry.type === 'file') {
          // Deleted on the server, and its name now holds something else: settled here, before the name is used.
          const b0 = base.get(sameName)!;
          const entry = { ...mine!.entry, disk: live.disk(sameName) ?? mine!.entry.disk };
          j.dropBase(sameName);
          if ((await localSha(ctx, entry, b0)) === b0.sha256) {
            const gonePath = live.path(sameName)!;
            await fs.rm(full(sameName), { force: true });
            live.remove(sameName);
            r.line(`deleted ${gonePath}`);
            actions++;
          } else mine = { ...mine!, isNew: true };
        }
        if (!live.has(sameName)) {
          /* the name is free now */
        } else if (mine && !mine.isNew && !(await yieldsName(sameName)) && movedThere(sameName)) {
          await parkNode(sameName);
          actions++;
        } else if (mine && !mine.isNew && (await yieldsName(sameName))) {
          // A local rename onto a name the server gave to something else first: the local one yields.
          if ((await keepAsCopy(sameName)) === undefined) continue;
          actions++;
        } else if (!mine?.isNew) continue;
        else {
          const entry = { ...mine.entry, disk: live.disk(sameName) ?? mine.entry.disk };
          const same =
            mine.entry.type === rn.type &&
            (rn.type === 'folder' || (rn.sha256 === '' ? entry.size === 0 : (await localSha(ctx, entry, undefined)) === rn.sha256));
          if (same) {
            // Created on both sides alike: linked, nothing copied (the local spelling of its name stays).
            live.rekey(sameName, id);
            j.putBase(toBase(rn, await statOf(full(id))));
            actions++;
            continue;
          }
          if ((await keepAsCopy(sameName)) === undefined) continue;
          actions++;
        }
      } else if (await exists(target)) continue;
      if (rn.type === 'folder') {
        await folders.make(rn, target);
        actions++;
      } else if (rn.sha256) {
        // The name is taken now; the bytes come below, several files at a time.
        live.set(id, rn.parentId, rn.name, 'file');
        fresh.push({ node: rn, target });
      } else {
        // Created by a sync op without content (docs/SYNC-CLIENT.md, "Files without content"): an empty file here.
        await fs.writeFile(target, '', { flag: 'wx' });
        live.set(id, rn.parentId, rn.name, 'file');
        j.putBase(toBase({ ...rn, size: 0 }, await statOf(target)));
        r.line(`created ${targetPath}`);
        actions++;
      }
    } catch (err) {
      // One entry that cannot be applied is reported and skipped; the rest of the pass goes on.
      if (!skipFailed(ctx, pathIn(remote, id) ?? rn.name, err)) throw err;
    }
  }
  // The bytes of new files come after the walk, several files at a time, then those of small files replaced.
  const brought = await fetcher.fetchAll(fresh);
  actions += await fetcher.fetchAll(replaced);
  const deletions = await applyDeletions(ctx, remote, base, matched, live);
  const others = actions + deletions.deleted;
  if (disk) {
    // A file or folder placed whose stat could not be read has no entry: then only a new scan says what is there.
    const unsure = fetcher.landed.length === fetcher.actions && folders.allSeen ? 0 : 1;
    disk.landed.push(...folders.made, ...fetcher.landed);
    disk.other += others - folders.count + setAside + unsure;
    disk.forPush += forPush + deletions.kept;
  }
  return others + brought;
}
