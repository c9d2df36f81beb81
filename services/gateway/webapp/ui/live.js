// Live updates: the change feed's long poll. Every batch of changes bumps `changes`, and the open view
// reloads what it shows.
import { signal } from '@preact/signals';
import { api } from './api.js';

export const changes = signal(0);
/** Bumped to stop the loop that is running (sign-out, or another account signing in). */
let generation = 0;
let running = false;

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function stopChanges() {
  generation += 1;
  running = false;
}

/**
 * Reads to the feed's end without showing anything, then waits for what comes next. A cursor the
 * service refuses (400: another account signed in meanwhile) starts over; 401 stops.
 */
export async function followChanges() {
  if (running) return;
  running = true;
  const mine = ++generation;
  let cursor = '';
  let caughtUp = false;
  while (mine === generation) {
    try {
      const wait = caughtUp ? '&wait=25' : '';
      const page = await api.get(`/v1/sync/changes?limit=1000${wait}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      if (mine !== generation) return;
      cursor = page.cursor;
      if (caughtUp && page.items.length > 0) changes.value += 1;
      if (!page.hasMore) caughtUp = true;
    } catch (err) {
      const status = /** @type {any} */ (err)?.status;
      if (status === 401 || mine !== generation) break;
      if (status === 400) {
        cursor = '';
        caughtUp = false;
      }
      await sleep(3000);
    }
  }
  if (mine === generation) running = false;
}
