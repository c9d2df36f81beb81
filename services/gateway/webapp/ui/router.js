// The app's addresses: each view has its own path, so back, forward, reload and bookmarks work.
import { signal } from '@preact/signals';

export const route = signal(location.pathname + location.search);

/** @param {string} path @param {{ replace?: boolean }} [options] */
export function navigate(path, options = {}) {
  if (path === route.value) return;
  if (options.replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  route.value = path;
  window.scrollTo(0, 0);
}

addEventListener('popstate', () => {
  route.value = location.pathname + location.search;
});

/** Follows in-app links without a page load; downloads and other targets go to the browser. */
document.addEventListener('click', (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = /** @type {Element} */ (event.target).closest?.('a[data-nav]');
  if (!(link instanceof HTMLAnchorElement)) return;
  event.preventDefault();
  navigate(link.pathname + link.search);
});

/** The current view and its parameter, from the path. @param {string} path */
export function parseRoute(path) {
  const pathname = path.split('?')[0] ?? '/';
  const folder = /^\/folders\/([0-9a-f]{32})$/.exec(pathname);
  if (folder) return { view: 'files', folderId: folder[1] ?? '' };
  const share = /^\/s\/([A-Za-z0-9_-]+)$/.exec(pathname);
  if (share) return { view: 'share', token: share[1] ?? '' };
  const views = { '/trash': 'trash', '/devices': 'devices', '/app-passwords': 'app-passwords', '/account': 'account', '/users': 'users' };
  return { view: /** @type {Record<string, string>} */ (views)[pathname] ?? 'files', folderId: '' };
}
