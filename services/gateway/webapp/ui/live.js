// Live updates: the change feed's long poll. Every batch of changes bumps `changes`, and the open view
// reloads what it shows.
import { signal } from '@preact/signals';
import { api } from './api.js';

export const changes = signal(0);
let running = false;

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Catches up to the feed's end without showing anything, then waits for what comes next. */
export async function followChanges() {
  if (running) return;
  running = true;
  let cursor = '';
  try {
    for (;;) {
      const page = await api.get(`/v1/sync/changes?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      cursor = page.cursor;
      if (!page.hasMore) break;
    }
    for (;;) {
      try {
        const page = await api.get(`/v1/sync/changes?limit=1000&wait=25&cursor=${encodeURIComponent(cursor)}`);
        cursor = page.cursor;
        if (page.items.length > 0) changes.value += 1;
      } catch (err) {
        if (/** @type {any} */ (err)?.status === 401) {
          running = false;
          return;
        }
        await sleep(3000);
      }
    }
  } catch {
    running = false;
    await sleep(5000);
    void followChanges();
    return;
  }
}
