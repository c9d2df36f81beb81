import { lstatSync, promises as fs } from 'node:fs';
import { join } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { IGNORE_FILE, STATE_DIR } from './journal';

/** One file or folder found in DIR. `path` is the NFC form used for comparison, `disk` the name on disk. */
export interface LocalEntry {
  path: string;
  disk: string;
  type: 'file' | 'folder';
  size: number;
  mtimeMs: number;
  ino: number;
  /** Read within its file system's mtime step of the mtime (`mtimeStep`): a write in the same step would leave size and mtime as they are. */
  racy: boolean;
  /** When the scan read these figures (ms since the epoch): the first look at a file still being written (context.ts, `firstLook`). */
  seenAt?: number;
}

/**
 * The coarsest mtime step of a file system a folder may be on (FAT: 2 s; HFS+, exFAT through some
 * FUSE drivers: 1 s). Such file systems only ever record whole seconds.
 */
export const MTIME_TICK_MS = 2000;

/**
 * The step of a file system that records fractions of a second (ext4, XFS, Btrfs, APFS, NTFS: 100 ns
 * or finer; exFAT: 10 ms), bounded by the kernel's coarse clock that stamps writes (a few ms), with
 * room for the two clocks to differ.
 */
export const FINE_MTIME_TICK_MS = 100;

/**
 * The mtime step to assume for an mtime: one in whole seconds may come from a file system that keeps
 * nothing finer, so it gets the coarsest step; a fraction proves a fine one. A fine file system's
 * mtime falls on a whole second once in a thousand files, which then only costs a hash.
 */
export const mtimeStep = (mtimeMs: number) => (mtimeMs % 1000 === 0 ? MTIME_TICK_MS : FINE_MTIME_TICK_MS);

/**
 * Whether an mtime read at `readAt` (taken before the stat) may not change for a write after it:
 * such a file's size and mtime do not vouch for its bytes, and it is hashed again on a later pass.
 */
export const isRacy = (mtimeMs: number, readAt: number) => mtimeMs > readAt - mtimeStep(mtimeMs);

export interface LocalScan {
  entries: Map<string, LocalEntry>;
  /** Folders that could not be read: what the journal knows below them is not taken as deleted. */
  unreadable: string[];
  /** Entries whose NFC name equals a sibling's: each must be renamed before it can be synced. */
  clashes: LocalEntry[];
  /** Whether DIR's file system keeps a file's inode number for its life (see `stableInodes`). */
  stableInodes: boolean;
}

/**
 * File systems whose inode numbers are made up per mount or per cached node, so that one number may
 * name another file later: FUSE (exfat-fuse, ntfs-3g, ...), FAT and exFAT. Their statfs magic numbers.
 */
const UNSTABLE_INODES = new Set([0x65735546, 0x4d44, 0x2011bab0]);

/** Whether an inode number found in DIR still names the same file after a remount (ext4, APFS, ...: yes). */
export async function stableInodes(dir: string): Promise<boolean> {
  try {
    return !UNSTABLE_INODES.has((await fs.statfs(dir)).type);
  } catch {
    return false;
  }
}

export const nfc = (s: string) => s.normalize('NFC');

export function joinPath(parent: string, name: string): string {
  return parent === '' ? name : `${parent}/${name}`;
}

/** What a scan would read of a file or folder the client itself just put in place, from its stat read then. */
export function placedEntry(
  path: string,
  disk: string,
  type: 'file' | 'folder',
  st: { size: number; mtimeMs: number; ino: number; racy: boolean },
  seenAt: number,
): LocalEntry {
  return { path, disk, type, size: type === 'file' ? st.size : 0, mtimeMs: st.mtimeMs, ino: st.ino, racy: st.racy, seenAt };
}

export function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** The patterns of `DIR/.filesyncignore` (gitignore syntax); the state folder and the file itself always. */
export async function loadIgnore(dir: string): Promise<(path: string, isFolder: boolean) => boolean> {
  const ig: Ignore = ignore();
  const patterns = await fs.readFile(join(dir, IGNORE_FILE), 'utf8').catch(() => '');
  ig.add(patterns);
  // Without a pattern (blank lines and comments only), nothing but the client's own files is ignored.
  const none = patterns.split(/\r?\n/).every((line) => line.trim() === '' || line.startsWith('#'));
  return (path, isFolder) => {
    if (path === STATE_DIR || path.startsWith(`${STATE_DIR}/`) || path === IGNORE_FILE) return true;
    if (none) return false;
    try {
      return ig.ignores(isFolder ? `${path}/` : path);
    } catch {
      return false;
    }
  };
}

/**
 * Stats taken in a row before the scan lets transfers run: a stat of a cached inode takes microseconds
 * called directly, several times that as a promise through the thread pool, which a pass paid for
 * every file of DIR.
 */
const YIELD_EVERY = 256;

/** Walks DIR with stat only (size, mtime, inode); content is hashed later, only where it changed. */
export async function scanLocal(dir: string, ignored: (path: string, isFolder: boolean) => boolean): Promise<LocalScan> {
  const scan: LocalScan = { entries: new Map(), unreadable: [], clashes: [], stableInodes: await stableInodes(dir) };
  let statted = 0;
  const walk = async (diskRel: string, nfcRel: string): Promise<void> => {
    let names: string[];
    try {
      names = await fs.readdir(diskRel === '' ? dir : join(dir, diskRel));
    } catch {
      scan.unreadable.push(nfcRel);
      return;
    }
    names.sort();
    const sub: [string, string][] = [];
    for (const name of names) {
      const disk = joinPath(diskRel, name);
      const path = joinPath(nfcRel, nfc(name));
      let st;
      const readAt = Date.now();
      try {
        st = lstatSync(join(dir, disk));
      } catch {
        continue;
      }
      if (++statted % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      const type = st.isDirectory() ? 'folder' : st.isFile() ? 'file' : null;
      if (type === null || ignored(path, type === 'folder')) continue;
      const entry: LocalEntry = { path, disk, type, size: type === 'file' ? st.size : 0, mtimeMs: st.mtimeMs, ino: st.ino, racy: isRacy(st.mtimeMs, readAt), seenAt: readAt };
      if (scan.entries.has(path)) {
        scan.clashes.push(entry);
        continue;
      }
      scan.entries.set(path, entry);
      if (type === 'folder') sub.push([disk, path]);
    }
    for (const [disk, path] of sub) await walk(disk, path);
  };
  await walk('', '');
  return scan;
}

/**
 * `<stem> (conflicted copy <device> <YYYY-MM-DD HHMMSS>)<ext>`, in the device's local time; the
 * `n`th copy of one name made in one second ends its stamp with ` <n>`.
 */
export function conflictedName(name: string, device: string, at = new Date(), n = 1): string {
  const dot = name.lastIndexOf('.');
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  const pad = (v: number) => String(v).padStart(2, '0');
  const stamp = `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${pad(at.getHours())}${pad(at.getMinutes())}${pad(at.getSeconds())}`;
  return `${stem} (conflicted copy ${device} ${stamp}${n > 1 ? ` ${n}` : ''})${ext}`;
}

/**
 * The first conflicted-copy name of `name` that nothing holds in the folder `parent` (a full path):
 * a rename replaces what it lands on, and a second copy of one name in one second must not wait for
 * the clock (a pass that waits for it only repeats itself).
 */
export async function freeConflictedName(parent: string, name: string, device: string, at = new Date()): Promise<string> {
  for (let n = 1; ; n++) {
    const copy = conflictedName(name, device, at, n);
    const taken = await fs.lstat(join(parent, copy)).then(
      () => true,
      (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return false;
        throw err;
      },
    );
    if (!taken) return copy;
  }
}
