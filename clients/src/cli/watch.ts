import { relative, sep } from 'node:path';
import { ApiError, AbortedError, NetworkError } from '../sdk/errors';
import { sleep } from '../sdk/http';
import { GuardError, type SyncContext } from './context';
import { MAX_PASSES, runPass, syncOnce } from './engine';
import { ExitError } from './session';
import { MTIME_TICK_MS } from './scan';
import { TreeWatcher } from './tree.watcher';

/**
 * Quiet time after the last event before a pass: a burst of writes (a folder copied in, a large file
 * saved) is taken in one pass, and a file whose last write is this old is past its racy window (scan.ts).
 * It is the longest pause the kernel's dirty page throttling imposes on a writer (Linux's MAX_PAUSE):
 * a shorter one starts passes in such pauses, whose uploads of the file then end unfinished.
 */
const DEBOUNCE_MS = 200;
const PERIODIC_SCAN_MS = 60_000;
const FALLBACK_SCAN_MS = 5_000;
const LONG_POLL_S = 25;
const PLACED_EVENT_MS = 5_000;

/**
 * `sync DIR` without `--once`: a pass at start, then one whenever the watcher (a hint, debounced),
 * the change feed's long poll or the periodic scan says something may have changed. A watcher that
 * fails (ENOSPC, too many handles) is closed and the periodic scan becomes frequent instead.
 */
export async function syncForever(ctx: SyncContext): Promise<void> {
  let wake: (() => void) | undefined;
  let dirty = true;
  // Whether the disk may hold what no pass has read yet: a watcher hint since the last pass began,
  // a timed scan, or a pass that failed or left work for the next. Without it, a pass the feed
  // alone asks for reads the folder only when the feed brings something new (engine.ts, runPass).
  let diskDirty = true;
  const poke = () => {
    dirty = true;
    wake?.();
  };
  const pokeDisk = () => {
    diskDirty = true;
    poke();
  };
  let timer: NodeJS.Timeout | undefined;
  let recheck: NodeJS.Timeout | undefined;
  const debounced = () => {
    diskDirty = true;
    clearTimeout(timer);
    timer = setTimeout(poke, DEBOUNCE_MS);
  };
  let scanEvery = PERIODIC_SCAN_MS;
  // A download's own rename into place, or a folder made for the server's, is no local change: its
  // event is dropped once, unless it comes late. A write after it brings another event.
  const placed = new Map<string, { at: number; kind: 'file' | 'folder' }>();
  ctx.placing = (full, kind = 'file') => {
    const path = relative(ctx.dir, full).split(sep).join('/');
    placed.set(path, { at: Date.now(), kind });
    return () => placed.delete(path);
  };
  const expected = (path: string) => {
    const mine = placed.get(path);
    if (mine === undefined) return undefined;
    placed.delete(path);
    return Date.now() - mine.at < PLACED_EVENT_MS ? mine.kind : undefined;
  };
  let watcher: TreeWatcher | undefined = new TreeWatcher(
    ctx.dir,
    debounced,
    (err) => {
      ctx.reporter.error(`watching stopped (${err.message}); scanning every ${FALLBACK_SCAN_MS / 1000} s instead`);
      watcher = undefined;
      scanEvery = FALLBACK_SCAN_MS;
    },
    expected,
  );
  await watcher.start();

  // Waiting for the end of the pass under way (or the next one), resolved by the loop below.
  const passWaiters: Array<() => void> = [];
  const passEnd = () => new Promise<void>((resolve) => passWaiters.push(resolve));

  // The feed's long poll only rings the bell; the pass itself reads the feed from the journal's cursor.
  const poll = async () => {
    while (!ctx.signal.aborted) {
      try {
        const page = await ctx.session.authed(() => ctx.session.client.changes({ cursor: ctx.journal.get('cursor'), wait: LONG_POLL_S, limit: 1, signal: ctx.signal }));
        if (page.items.length > 0) {
          // Also for this device's own echoes: the pass moves the cursor past them. Until one has,
          // the poll would answer at once, so it asks again once a pass has ended (a few seconds at most).
          const ended = passEnd();
          poke();
          await Promise.race([ended, sleep(5000, ctx.signal)]);
        }
      } catch (err) {
        if (ctx.signal.aborted) return;
        if (err instanceof ExitError) throw err;
        await sleep(5000, ctx.signal).catch(() => undefined);
      }
    }
  };
  const polling = poll().catch(() => undefined);

  let failures = 0;
  try {
    let first = true;
    while (!ctx.signal.aborted) {
      if (dirty) {
        dirty = false;
        try {
          if (first) await syncOnce(ctx);
          else {
            // With a watcher, what a pass leaves comes back as an event (a write meanwhile, the feed's
            // ring for new changes and for this device's echoes): another pass at once only for what it
            // left pending. Without one, passes repeat until one finds nothing to do.
            for (let i = 0; i < MAX_PASSES && !ctx.signal.aborted; i++) {
              const diskUnchanged = watcher !== undefined && !diskDirty;
              diskDirty = false;
              const actions = await runPass(ctx, diskUnchanged);
              if (watcher ? ctx.pending === 0 : actions === 0) break;
              diskDirty = true;
            }
            ctx.journal.set('last_sync', new Date().toISOString());
          }
          first = false;
          ctx.deferRacy = true;
          if (ctx.recheckLater) {
            ctx.recheckLater = false;
            clearTimeout(recheck);
            recheck = setTimeout(pokeDisk, MTIME_TICK_MS + 100);
          }
          failures = 0;
          const stale = Date.now() - PLACED_EVENT_MS;
          for (const [path, { at }] of placed) if (at < stale) placed.delete(path);
        } catch (err) {
          if (ctx.signal.aborted || err instanceof AbortedError) break;
          if (err instanceof ExitError || err instanceof GuardError) throw err;
          if (!(err instanceof ApiError || err instanceof NetworkError)) throw err;
          failures++;
          ctx.reporter.error(`${err.message}; trying again`);
          dirty = true;
          diskDirty = true;
          await sleep(Math.min(30_000, 1000 * 2 ** failures), ctx.signal).catch(() => undefined);
          continue;
        } finally {
          for (const resolve of passWaiters.splice(0)) resolve();
        }
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        const t = setTimeout(() => {
          dirty = true;
          diskDirty = true;
          resolve();
        }, scanEvery);
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
        if (dirty) resolve();
        void t;
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  } finally {
    clearTimeout(timer);
    clearTimeout(recheck);
    watcher?.close();
    await polling;
  }
}
