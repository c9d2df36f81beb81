import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { ApiError } from '../sdk/errors';
import type { Journal, BaseNode, RemoteNode } from './journal';
import { UnsafeIdError } from './local.names';
import type { Reporter } from './output';
import type { Session } from './session';
import type { Transfers } from './transfers';
import { DELTA_THRESHOLD } from './delta.transfers';
import { BULK_FILE_MAX } from './bulk.transfers';
import type { LocalEntry, LocalScan } from './scan';
import { sha256OfFile } from './file.pieces';
import { isRacy } from './scan';

/** What one sync run shares between its passes. */
export interface SyncContext {
  dir: string;
  journal: Journal;
  session: Session;
  reporter: Reporter;
  transfers: Transfers;
  ignored: (path: string, isFolder: boolean) => boolean;
  force: boolean;
  signal: AbortSignal;
  /** Set when a content was refused for the quota during the run: `--once` then exits 1. */
  quotaExceeded: boolean;
  /** Set when something was left unsent or unapplied for a reason a later run may not settle by itself (too large, refused): `--once` then exits 1. */
  unsent: boolean;
  /** The server's nodes this disk cannot hold (see `screenRemote`), for the current pass. */
  unplaceable: Set<string>;
  /** What was already reported as skipped in this run: said once, not once a pass. */
  reported: Set<string>;
  /** Changes refused for a state the next pull settles (a stale baseRev, a name taken): another pass is due. */
  pending: number;
  /** DIR is on a case-insensitive file system: two server names differing only in case cannot both live there. */
  caseInsensitive: boolean;
  /** DIR's file system keeps a file's inode number for its life (scan.ts, `stableInodes`). */
  stableInodes: boolean;
  /**
   * Watching: a large file whose stat is its base's but was read too soon after its last write to
   * vouch for its bytes is checked by a later pass instead of being read again now, and this is set.
   */
  deferRacy?: boolean;
  recheckLater?: boolean;
  /** The scan of DIR as the last pass left it, for a pass that knows the disk unchanged since (engine.ts, `runPass`). */
  lastScan?: LocalScan;
  /** The last pass's push found nothing to send on that scan, and left nothing for the next (engine.ts, `runPass`). */
  pushedNothing?: boolean;
  /**
   * Watching: told of each file or folder the client itself is about to put in place, whose event is
   * then no local change; the returned function takes that back when that failed.
   */
  placing?: (full: string, kind?: 'file' | 'folder') => () => void;
}

/** Whether DIR's file system folds case, probed once in the state folder. */
export async function foldsCase(dir: string): Promise<boolean> {
  const probe = join(dir, '.filesync', 'case-probe');
  await fs.writeFile(probe, '');
  try {
    return (await statOf(join(dir, '.filesync', 'CASE-PROBE'))) !== undefined;
  } finally {
    await fs.rm(probe, { force: true });
  }
}

/** Errors of one name the file system refuses (too long, invalid): the entry cannot live here at all. */
const NAME_ERRORS = new Set(['ENAMETOOLONG', 'EILSEQ', 'EINVAL', 'ERR_INVALID_ARG_VALUE']);

/**
 * One entry that failed on its own (a file-system error, a request refused for that resource) is
 * reported as `skipped: <path>: <why>` and the pass goes on with the rest; answers false for errors
 * that end the pass (aborted, signed out, the service failing or out of reach). A name the disk
 * cannot hold leaves `--once` at exit 0 (docs/CLIENT.md guarantee 6); anything else left
 * unapplied makes it exit 1. A resource gone or changed since the pull is settled by the next pass.
 */
export function skipFailed(ctx: SyncContext, path: string, err: unknown): boolean {
  if (ctx.signal.aborted) return false;
  if (err instanceof ApiError) {
    if (err.status === 404 || err.status === 409 || err.status === 412) {
      ctx.pending++;
      return true;
    }
    if (err.status === 401 || err.status === 429 || err.status >= 500) return false;
    ctx.unsent = true;
  } else if (!(err instanceof UnsafeIdError)) {
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    if (typeof code !== 'string') return false;
    if (!NAME_ERRORS.has(code)) {
      if (!/^E[A-Z0-9]+$/.test(code)) return false;
      ctx.unsent = true;
    }
  }
  const line = `skipped: ${path}: ${(err as Error).message}`;
  if (!ctx.reported.has(line)) {
    ctx.reported.add(line);
    ctx.reporter.line(line);
  }
  return true;
}

/** The deletion guard stopped the pass before it deleted anything (exit 1). */
export class GuardError extends Error {}

/** More than half of the files on a side, and more than 10, needs `--force`. */
export function checkGuard(ctx: SyncContext, side: 'local' | 'server', deletions: number, files: number): void {
  if (ctx.force || deletions <= 10 || deletions * 2 <= files) return;
  throw new GuardError(
    `deletion guard: this pass would delete ${deletions} of ${files} files on the ${side} side; nothing was deleted (run with --force if that is intended)`,
  );
}

/** The base's SHA-256 when the file's stat vouches that it still holds the base's bytes, else undefined. */
export function vouchedSha(ctx: SyncContext, entry: LocalEntry, base: BaseNode | undefined): string | undefined {
  // A racy mtime does not vouch for the bytes, except of an empty file: no write keeps it empty and changes it.
  // Nor does the stat of another file at the base's path: two files written in one tick of the kernel's
  // clock share their mtime, and a swap by renames leaves each with the other's size and mtime.
  const sameFile = !ctx.stableInodes || entry.ino === base?.ino;
  const trusted = base && base.type === 'file' && sameFile && (!base.racy || entry.size === 0);
  return trusted && entry.size === base.size && entry.mtimeMs === base.mtimeMs ? base.sha256 : undefined;
}

/** Whether a local file still holds the base's bytes, hashing it only when its size or mtime moved. */
export async function localSha(ctx: SyncContext, entry: LocalEntry, base: BaseNode | undefined): Promise<string> {
  const vouched = vouchedSha(ctx, entry, base);
  if (vouched !== undefined) return vouched;
  // A large file is cut into chunks in the same read, for the delta upload that may follow.
  if (entry.size >= DELTA_THRESHOLD) {
    const known = base?.type === 'file' ? { id: base.id, sha256: base.sha256, sameStat: entry.size === base.size && entry.mtimeMs === base.mtimeMs } : undefined;
    return ctx.transfers.readLarge(join(ctx.dir, entry.disk), known);
  }
  return (await sha256OfFile(join(ctx.dir, entry.disk))).sha256;
}

export function toBase(r: RemoteNode, stat: { mtimeMs: number; ino: number; racy: boolean } | undefined): BaseNode {
  return { ...r, mtimeMs: stat?.mtimeMs ?? -1, ino: stat?.ino ?? -1, racy: stat?.racy ?? false };
}

export async function statOf(full: string): Promise<{ mtimeMs: number; ino: number; size: number; racy: boolean } | undefined> {
  try {
    const readAt = Date.now();
    const st = await fs.lstat(full);
    return { mtimeMs: st.mtimeMs, ino: st.ino, size: st.size, racy: isRacy(st.mtimeMs, readAt) };
  } catch {
    return undefined;
  }
}

/** A file written within this long may still be being written: its mtime is when a write began. */
const FRESH_MS = 2000;
/**
 * How far apart two looks at a fresh large file must be: a writer held back by the kernel's dirty
 * page throttling pauses at most 200 ms (Linux's MAX_PAUSE), during which its file does not move.
 */
const SETTLE_MS = 250;

/**
 * Watching: whether a file the scan saw is still being written, its size or mtime having moved since
 * (a download saved, a file copied in, an archive being built). Sending it now would commit a part of
 * it, and every other device would fetch that part, then the rest a moment later. It is left to the
 * pass that the end of the write brings (the watcher's event), with a recheck in case none comes.
 * A file above BULK_FILE_MAX written in the last FRESH_MS is looked at again SETTLE_MS after the
 * first look, as a writer may be paused; a smaller one costs little to send again. Gone meanwhile
 * counts as moving: the next pass sees what became of it. Not for `--once`, which sends what the
 * scan found, as it did before watching began.
 */
export async function stillWriting(ctx: SyncContext, entry: LocalEntry): Promise<boolean> {
  const look = await firstLook(ctx, entry);
  return look.moving || !(await look.settled);
}

/** How often a fresh large file is looked at until SETTLE_MS have passed: a write that resumes is seen within this. */
const LOOK_EVERY_MS = 25;

/**
 * stillWriting in two steps, for an upload that streams its bytes meanwhile: `moving` is the first
 * look; `settled` keeps looking until SETTLE_MS after the scan's own look (time spent hashing the
 * file since counts) and answers false as soon as the file moves, so an upload under way can be
 * stopped at once, or true once it held still. A tus upload holds its last bytes back until then.
 */
export async function firstLook(ctx: SyncContext, entry: LocalEntry): Promise<{ moving: boolean; settled: Promise<boolean> }> {
  const still = { moving: false, settled: Promise.resolve(true) };
  if (!ctx.deferRacy) return still;
  const full = join(ctx.dir, entry.disk);
  const same = (now: { size: number; mtimeMs: number } | undefined) => now !== undefined && now.size === entry.size && now.mtimeMs === entry.mtimeMs;
  const lookedAt = entry.seenAt ?? Date.now();
  if (!same(await statOf(full))) {
    ctx.recheckLater = true;
    return { moving: true, settled: Promise.resolve(false) };
  }
  if (entry.size <= BULK_FILE_MAX || entry.mtimeMs <= Date.now() - FRESH_MS) return still;
  const settled = (async () => {
    for (let left = lookedAt + SETTLE_MS - Date.now(); ; left = lookedAt + SETTLE_MS - Date.now()) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(LOOK_EVERY_MS, left))));
      if (!same(await statOf(full))) {
        ctx.recheckLater = true;
        return false;
      }
      if (left <= LOOK_EVERY_MS) return true;
    }
  })();
  return { moving: false, settled };
}
