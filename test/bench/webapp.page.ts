import type { Browser, BrowserContext, Page } from 'playwright-core';
import { signInThroughForm } from '../webapp/browser';

/**
 * What the web app bench does inside Chromium. Browser code is passed as text: the bench compiles
 * without the DOM's types. Predicates are functions, not strings: the app's CSP forbids eval.
 */

/** A fresh context (empty cache) signed in through the form; `bytes` counts every JS and CSS response it received. */
export async function signedInPage(browser: Browser, baseUrl: string, username: string, password: string): Promise<{ context: BrowserContext; page: Page; assets: Array<{ url: string; wire: number; body: number }> }> {
  const context = await browser.newContext({ baseURL: baseUrl });
  const page = await context.newPage();
  page.setDefaultTimeout(120_000);
  const assets: Array<{ url: string; wire: number; body: number }> = [];
  const pending: Array<Promise<void>> = [];
  page.on('requestfinished', (request) => {
    const type = request.resourceType();
    if (type !== 'script' && type !== 'stylesheet') return;
    pending.push(
      (async () => {
        // Encoded (gzip) body as received, and the body once decoded.
        const sizes = await request.sizes();
        const body = (await (await request.response())?.body())?.length ?? 0;
        assets.push({ url: request.url().replace(baseUrl, ''), wire: sizes.responseBodySize, body });
      })(),
    );
  });
  await signInThroughForm(page, username, password);
  await page.getByRole('heading', { level: 1, name: 'Files' }).waitFor();
  await page.getByRole('table').waitFor();
  // The change feed's long poll keeps the network busy: give lazily loaded code a moment instead.
  await page.waitForTimeout(1000);
  await Promise.all(pending);
  return { context, page, assets };
}

/**
 * Loads the folder's address as a new document and answers the milliseconds from the navigation's
 * start to the first file row with its link in the page (performance.now() counts from the start).
 */
export async function timeToFirstRow(page: Page, folderId: string): Promise<number> {
  await page.goto(`/folders/${folderId}`, { waitUntil: 'commit' });
  const handle = await page.waitForFunction(
    () => ((globalThis as any).document.querySelector('table tr.row a[href^="/v1/files/"]') ? performance.now() : 0),
    undefined,
    { polling: 'raf' },
  );
  return (await handle.jsonValue()) as number;
}

/** One page of `GET /v1/files` of the folder fetched and parsed by the page itself, in milliseconds. */
export async function timeApiPage(page: Page, folderId: string, limit: number): Promise<number> {
  return (await page.evaluate(`(async () => {
    const t = performance.now();
    const res = await fetch('/v1/files?folderId=${folderId}&limit=${limit}', { credentials: 'same-origin' });
    const body = await res.json();
    if (!res.ok || body.items.length === 0) throw new Error('GET /v1/files: ' + res.status);
    return performance.now() - t;
  })()`)) as number;
}

/**
 * Starts watching the main thread: the longest task (Long Tasks API, tasks over 50 ms) and the longest
 * gap between animation frames from now until `stopWatching`.
 */
export async function startWatching(page: Page): Promise<void> {
  await page.evaluate(`(() => {
    const w = (window.__benchWatch = { longestTask: 0, longestGap: 0, last: performance.now(), from: performance.now(), tasks: [], on: true });
    w.observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        w.longestTask = Math.max(w.longestTask, e.duration);
        w.tasks.push([Math.round(e.startTime - w.from), Math.round(e.duration)]);
      }
    });
    w.observer.observe({ type: 'longtask' });
    const frame = (t) => {
      if (!w.on) return;
      w.longestGap = Math.max(w.longestGap, t - w.last);
      w.last = t;
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  })()`);
}

/** The longest task and frame gap, and every task over 50 ms as [ms after the watch began, duration]. */
export async function stopWatching(page: Page): Promise<{ longestTask: number; longestGap: number; tasks: Array<[number, number]> }> {
  return (await page.evaluate(`(() => {
    const w = window.__benchWatch;
    w.on = false;
    w.observer.disconnect();
    return { longestTask: w.longestTask, longestGap: w.longestGap, tasks: w.tasks };
  })()`)) as { longestTask: number; longestGap: number; tasks: Array<[number, number]> };
}

/**
 * Drops `count` files of `bytes` random bytes each onto the listing (a DataTransfer, as a person's
 * drop gives), then waits until the upload panel says all are done; milliseconds from the drop.
 * With `folders`, the files come as a dropped folder tree: `folders` subfolders of `top`, files spread
 * over them.
 */
export async function dropAndWait(page: Page, count: number, bytes: number, tree?: { top: string; folders: number }): Promise<number> {
  await page.locator('div.files').waitFor();
  // The files are made first, outside the watched time: a person's drop hands over files that exist.
  await page.evaluate(`(() => {
    const count = ${count}, bytes = ${bytes}, tree = ${JSON.stringify(tree ?? null)};
    const files = [];
    for (let i = 0; i < count; i++) {
      const content = crypto.getRandomValues(new Uint8Array(bytes));
      files.push(new File([content], 'f' + String(i).padStart(5, '0') + '.bin', { type: 'application/octet-stream' }));
    }
    const drop = new Event('drop', { bubbles: true, cancelable: true });
    if (tree) {
      const file = (f) => ({ isFile: true, name: f.name, file: (ok) => ok(f) });
      const dir = (name, children) => {
        let read = false;
        return { isDirectory: true, name, createReader: () => ({ readEntries: (ok) => { ok(read ? [] : children); read = true; } }) };
      };
      const subs = Array.from({ length: tree.folders }, (_, d) => files.filter((_, i) => i % tree.folders === d).map(file));
      const top = dir(tree.top, subs.map((children, d) => dir('d' + String(d).padStart(4, '0'), children)));
      Object.defineProperty(drop, 'dataTransfer', { value: { items: [{ webkitGetAsEntry: () => top }], files: [] } });
    } else {
      const data = new DataTransfer();
      for (const f of files) data.items.add(f);
      Object.defineProperty(drop, 'dataTransfer', { value: data });
    }
    window.__benchDrop = drop;
  })()`);
  await startWatching(page);
  const t = (await page.evaluate(`(() => {
    const t = performance.now();
    document.querySelector('div.files').dispatchEvent(window.__benchDrop);
    window.__benchDrop = undefined;
    return t;
  })()`)) as number;
  const done = await page.waitForFunction(
    (want: string) => {
      const region = (globalThis as any).document.querySelector('section.uploads');
      if (region?.querySelector('[role=alert]')) return -1;
      return region?.textContent.includes(want) ? performance.now() : 0;
    },
    `${count} of ${count} done`,
    { polling: 100, timeout: 600_000 },
  );
  const at = (await done.jsonValue()) as number;
  if (at < 0) throw new Error(`a dropped file failed: ${await page.locator('section.uploads [role=alert]').first().textContent()}`);
  return at - t;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
}

/**
 * Runs `during` under the renderer's sampling profiler (DevTools protocol) and answers the functions
 * with the most self time, in milliseconds: where the main thread went while the page worked.
 */
export async function profileDuring(page: Page, during: () => Promise<unknown>, top = 8): Promise<Array<{ fn: string; ms: number }>> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 500 });
  await cdp.send('Profiler.start');
  try {
    await during();
  } catch (err) {
    await cdp.send('Profiler.stop').catch(() => undefined);
    await cdp.detach().catch(() => undefined);
    throw err;
  }
  const { profile } = (await cdp.send('Profiler.stop')) as unknown as { profile: { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] } };
  await cdp.detach();
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const { functionName, url, lineNumber, columnNumber } = byNode.get(id)!.callFrame;
    // The bundle is minified: a function is told by its file, line and column.
    const key = url ? `${functionName || '(anonymous)'} ${url.replace(/^.*\//, '')}:${lineNumber + 1}:${columnNumber + 1}` : functionName;
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i + 1] ?? 0) / 1000);
  });
  const busy = [...self.entries()].filter(([fn]) => fn !== '(idle)');
  const total = busy.reduce((sum, [, ms]) => sum + ms, 0);
  const ranked = busy.sort((a, b) => b[1] - a[1]).slice(0, top).map(([fn, ms]) => ({ fn, ms: Math.round(ms * 10) / 10 }));
  return [{ fn: 'all but idle', ms: Math.round(total) }, ...ranked];
}
