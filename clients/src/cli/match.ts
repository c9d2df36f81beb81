import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { BaseNode, RemoteNode } from './journal';
import { sha256OfFile } from './file.pieces';
import { baseName, joinPath, parentOf, type LocalEntry, type LocalScan } from './scan';

/** Where one resource (or a new local item, with a fresh id) is on disk now. */
export interface LocalNode {
  id: string;
  parentId: string;
  /** NFC name. */
  name: string;
  entry: LocalEntry;
  isNew: boolean;
}

export interface Matched {
  local: Map<string, LocalNode>;
  /** Ids of the journal whose place on disk could not be read: neither deleted nor changed. */
  unknown: Set<string>;
}

export const newId = () => randomBytes(16).toString('hex');

/** The path of a node from its parent chain, or undefined when a link is missing. */
export function pathIn(nodes: Map<string, { parentId: string; name: string }>, id: string): string | undefined {
  const names: string[] = [];
  let cur: string | undefined = id;
  for (let guard = 0; cur && guard < 4096; guard++) {
    const node: { parentId: string; name: string } | undefined = nodes.get(cur);
    if (!node) return undefined;
    names.push(node.name);
    cur = node.parentId;
  }
  return names.reverse().join('/');
}

/**
 * The ids of a tree, parents before children: by depth (the number of ancestors the map holds), in
 * the map's order within one depth. Each depth is counted once, from its parent's (a pass sorts
 * every node of DIR several times). With `only`, those ids alone, in that order among themselves.
 */
export function byDepth<T extends { parentId: string }>(nodes: Map<string, T>, only?: Iterable<string>): string[] {
  const depth = new Map<string, number>();
  const depthOf = (id: string): number => {
    const known = depth.get(id);
    if (known !== undefined) return known;
    // The chain up to the first node whose depth is known (or the top), then down it again.
    const chain: string[] = [];
    let d = 0;
    for (let cur: string | undefined = id; cur !== undefined; ) {
      const n = nodes.get(cur);
      const seen = depth.get(cur);
      if (seen !== undefined) {
        d = seen;
        break;
      }
      chain.push(cur);
      // A node at the top is 0 deep; one whose parent the map does not hold, 1. A chain that loops
      // or runs deeper than any path ends the count.
      if (!n || !n.parentId || chain.length > 4096) {
        d = -1;
        break;
      }
      if (!nodes.has(n.parentId)) {
        d = 0;
        break;
      }
      cur = n.parentId;
    }
    for (let i = chain.length - 1; i >= 0; i--) depth.set(chain[i]!, ++d);
    return depth.get(id)!;
  };
  const levels: string[][] = [];
  for (const id of only ?? nodes.keys()) (levels[depthOf(id)] ??= []).push(id);
  return levels.flat();
}

/**
 * Finds each journal node on disk: at the path its (possibly moved) parent gives it, else by inode
 * (a rename keeps the inode, and a renamed file keeps its size and mtime), else it is gone.
 * Whatever is left on disk is new and gets a fresh id. Where inode numbers are not stable, only the
 * path counts here, and `relinkMoved` finds renamed files by their content. A node whose folder the
 * base no longer holds (the server deleted it after moving the node out) has no path of its own: it
 * is looked for last, among what no other node took, by inode, else it is unknown (never deleted).
 */
export function matchLocal(base: Map<string, BaseNode>, scan: LocalScan, ignored: (path: string, isFolder: boolean) => boolean): Matched {
  const claimed = new Map<string, string>();
  const local = new Map<string, LocalNode>();
  const unknown = new Set<string>();
  const byIno = new Map<number, LocalEntry>();
  if (scan.stableInodes) for (const e of scan.entries.values()) byIno.set(e.ino, e);
  const isUnreadable = (path: string) => scan.unreadable.some((u) => u === '' || path === u || path.startsWith(`${u}/`));

  const claim = (id: string, found: LocalEntry) => {
    claimed.set(found.path, id);
    local.set(id, { id, parentId: '', name: baseName(found.path), entry: found, isNew: false });
  };
  const freeFor = (b: BaseNode) => (e: LocalEntry | undefined): e is LocalEntry => e !== undefined && !claimed.has(e.path) && e.type === b.type;
  const placeless: string[] = [];

  for (const id of byDepth(base)) {
    const b = base.get(id)!;
    if (b.parentId && unknown.has(b.parentId)) {
      unknown.add(id);
      continue;
    }
    const parentPath = b.parentId === '' ? '' : local.get(b.parentId)?.entry.path ?? pathIn(base, b.parentId);
    const expected = parentPath === undefined ? undefined : joinPath(parentPath, b.name);
    const atPath = expected === undefined ? undefined : scan.entries.get(expected);
    const free = freeFor(b);
    let found: LocalEntry | undefined;
    if (free(atPath) && (atPath.ino === b.ino || !scan.stableInodes)) found = atPath;
    else {
      const moved = byIno.get(b.ino);
      if (free(moved) && (b.type === 'folder' || (moved.size === b.size && moved.mtimeMs === b.mtimeMs))) found = moved;
      else if (free(atPath)) found = atPath;
    }
    if (found) claim(id, found);
    else if (expected === undefined) placeless.push(id);
    // Not seen: unknown (never deleted) when its place could not be read or is ignored now.
    else if (isUnreadable(expected) || ignored(expected, b.type === 'folder')) unknown.add(id);
  }
  // Nodes whose folder the base no longer holds, once every other node has taken what is its own:
  // by inode alone (edited or not, it is the same file).
  for (const id of placeless) {
    const b = base.get(id)!;
    const moved = byIno.get(b.ino);
    if (!(b.parentId && unknown.has(b.parentId)) && freeFor(b)(moved)) claim(id, moved);
    else unknown.add(id);
  }
  for (const e of scan.entries.values()) {
    if (claimed.has(e.path)) continue;
    const id = newId();
    claimed.set(e.path, id);
    local.set(id, { id, parentId: '', name: baseName(e.path), entry: e, isNew: true });
  }
  for (const node of local.values()) {
    const parentPath = parentOf(node.entry.path);
    node.parentId = parentPath === '' ? '' : claimed.get(parentPath) ?? '';
  }
  return { local, unknown };
}

/**
 * On a file system without stable inode numbers: a journal file not found at its path is the new
 * file of the same size, mtime (a rename keeps both) and content, if there is one. A folder renamed
 * there is a new folder, and its files are found in it this way: they move, and their bytes are not
 * sent again.
 */
export async function relinkMoved(dir: string, base: Map<string, BaseNode>, scan: LocalScan, matched: Matched): Promise<void> {
  if (scan.stableInodes) return;
  const candidates = [...matched.local.values()].filter((n) => n.isNew && n.entry.type === 'file');
  if (candidates.length === 0) return;
  const digests = new Map<string, Promise<string>>();
  const digest = (n: LocalNode) => {
    if (!digests.has(n.id)) digests.set(n.id, sha256OfFile(join(dir, n.entry.disk)).then(
        (d) => d.sha256,
        () => '',
      ));
    return digests.get(n.id)!;
  };
  for (const b of base.values()) {
    if (b.type !== 'file' || b.sha256 === '' || matched.local.has(b.id) || matched.unknown.has(b.id)) continue;
    for (const n of candidates) {
      if (!n.isNew || n.entry.size !== b.size || n.entry.mtimeMs !== b.mtimeMs || (await digest(n)) !== b.sha256) continue;
      matched.local.delete(n.id);
      n.id = b.id;
      n.isNew = false;
      matched.local.set(b.id, n);
      break;
    }
  }
}

/** Whether a remote node differs from the journal's base in place or content. */
export function remoteChanged(r: RemoteNode, b: BaseNode): boolean {
  return r.parentId !== b.parentId || r.name !== b.name || r.sha256 !== b.sha256 || r.type !== b.type;
}

/** Folders under which the server holds something this device has not seen (new or changed since the base). */
export function foldersWithUnseen(remote: Map<string, RemoteNode>, base: Map<string, BaseNode>): Set<string> {
  const marked = new Set<string>();
  for (const r of remote.values()) {
    const b = base.get(r.id);
    if (b && !remoteChanged(r, b)) continue;
    for (let cur = remote.get(r.parentId); cur && !marked.has(cur.id); cur = remote.get(cur.parentId)) marked.add(cur.id);
  }
  return marked;
}
