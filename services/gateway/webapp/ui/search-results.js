// Search results: the files of the whole tree whose names match, each with its folder.
import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from './api.js';
import { FileTable } from './file-table.js';
import { html } from './html.js';
import { changes } from './live.js';
import { Alert } from './ui.js';

/** @typedef {import('./file-table.js').Item} Item */

/** The folders' names of search results, fetched once each. @type {Map<string, Promise<string>>} */
const folderNames = new Map();
/** @param {string} id */
function folderName(id) {
  if (!id) return Promise.resolve('Files');
  let name = folderNames.get(id);
  if (!name) {
    name = api.get(`/v1/folders/${id}/path`).then(
      (res) => ['Files', ...res.items.map((/** @type {any} */ p) => p.name)].join(' / '),
      () => '',
    );
    folderNames.set(id, name);
  }
  return name;
}

/** @param {{ id: string }} props */
function FolderOf({ id }) {
  const [name, setName] = useState('');
  useEffect(() => void folderName(id).then(setName), [id]);
  return html`<a href=${id ? `/folders/${id}` : '/'} data-nav>${name || '…'}</a>`;
}

/** @param {{ query: string, actions: (item: Item) => any[], folderHref: (item: Item) => string, fileHref: (item: Item) => string }} props */
export function SearchResults({ query, actions, folderHref, fileHref }) {
  const [result, setResult] = useState(/** @type {{ items: Item[], total: number } | null} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  useEffect(() => {
    let live = true;
    const timer = setTimeout(() => {
      api.get(`/v1/files/search?limit=200&q=${encodeURIComponent(query)}`).then(
        (page) => live && (setError(null), setResult({ total: page.items.length, items: page.items.map((/** @type {any} */ f) => ({ ...f, type: 'file' })) })),
        (err) => live && setError(messageOf(err)),
      );
    }, 200);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [query, changes.value]);
  if (error) return html`<${Alert} message=${error} />`;
  if (!result) return html`<p role="status">Searching…</p>`;
  return html`<p role="status" class="search-count">${result.total === 0 ? `No file matches “${query}”.` : `${result.total} ${result.total === 1 ? 'file matches' : 'files match'} “${query}”.`}</p>
    ${result.total > 0 &&
    html`<${FileTable} total=${result.total} itemAt=${(/** @type {number} */ i) => result.items[i]} want=${() => undefined}
      sort="name" order="asc" selected=${new Set()} onSelect=${() => undefined} actions=${actions}
      folderHref=${folderHref} fileHref=${fileHref} caption=${`Files matching ${query}`}
      extraColumn=${{ title: 'Folder', cell: (/** @type {Item} */ item) => html`<${FolderOf} id=${item.folderId ?? ''} />` }} />`}`;
}
