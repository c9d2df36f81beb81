// The grid view: a card per child, pictures as their thumbnails (GET /v1/files/:id/thumbnail, made by
// the workers), everything else, and pictures without a thumbnail yet, as a generic icon. Cards are
// added 200 at a time as the end of the grid scrolls into view.
import { useEffect, useRef, useState } from 'preact/hooks';
import { formatBytes } from './api.js';
import { html } from './html.js';
import { ActionsMenu } from './ui.js';

/** @typedef {import('./file-table.js').Item} Item */
const STEP = 200;

/** A worker makes a new picture's thumbnail moments after its upload: until then, look again after 2, 4, 8, 16 and 32 s. */
const RETRIES = 5;
const NEW_FOR_MS = 2 * 60 * 1000;

/** @param {{ item: Item }} props */
function Thumbnail({ item }) {
  const [failed, setFailed] = useState(false);
  const [attempt, setAttempt] = useState(0);
  const picture = item.type === 'file' && (item.mimeType ?? '').startsWith('image/');
  useEffect(() => {
    if (!failed || attempt >= RETRIES || !(Date.now() - Date.parse(item.updatedAt) < NEW_FOR_MS)) return undefined;
    const timer = setTimeout(() => {
      setAttempt(attempt + 1);
      setFailed(false);
    }, 2000 * 2 ** attempt);
    return () => clearTimeout(timer);
  }, [failed, attempt, item.updatedAt]);
  if (!picture || failed) return html`<span class=${item.type === 'folder' ? 'big-icon folder' : 'big-icon file'} aria-hidden="true"></span>`;
  // A new element per attempt: the service answers a missing thumbnail with no-store, so it asks again.
  return html`<img key=${attempt} class="thumb" src=${`/v1/files/${item.id}/thumbnail?size=256`} alt=${item.name} loading="lazy" onError=${() => setFailed(true)} />`;
}

/**
 * @param {{ total: number, itemAt: (index: number) => Item | undefined, want: (first: number, last: number) => void,
 *   actions: (item: Item) => Array<{ label: string, run: () => void }>, folderHref: (item: Item) => string, fileHref: (item: Item) => string }} props
 */
export function FileGrid({ total, itemAt, want, actions, folderHref, fileHref }) {
  const [shown, setShown] = useState(STEP);
  const end = useRef(/** @type {HTMLDivElement | null} */ (null));
  const count = Math.min(total, shown);
  useEffect(() => want(0, count), [count, want]);
  useEffect(() => {
    if (!end.current) return undefined;
    const seen = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) setShown((n) => n + STEP);
    });
    seen.observe(end.current);
    return () => seen.disconnect();
  }, []);
  const cards = [];
  for (let i = 0; i < count; i += 1) {
    const item = itemAt(i);
    if (!item) {
      cards.push(html`<li key=${`loading-${i}`} class="card">Loading…</li>`);
      continue;
    }
    cards.push(html`<li key=${item.id} class="card">
      <${Thumbnail} item=${item} />
      <span class="card-name">
        ${item.type === 'folder' ? html`<a href=${folderHref(item)} data-nav>${item.name}</a>` : html`<a href=${fileHref(item)} download=${item.name}>${item.name}</a>`}
      </span>
      <span class="card-meta">${item.type === 'file' ? formatBytes(item.size ?? 0) : 'Folder'}</span>
      <span class="card-actions"><${ActionsMenu} label=${`Actions for ${item.name}`} items=${actions(item)} /></span>
    </li>`);
  }
  return html`<div class="grid-scroll">
    <ul class="grid">${cards}</ul>
    <div ref=${end} class="grid-end"></div>
  </div>`;
}
