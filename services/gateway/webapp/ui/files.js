// "Files": one folder's children with breadcrumbs, sorting, search, uploads, live updates.
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from './api.js';
import { FileGrid } from './file-grid.js';
import { FileTable } from './file-table.js';
import { createFolder, deleteItems, downloadZip, MoveDialog, NameDialog, rename, VersionsDialog } from './file-actions.js';
import { html } from './html.js';
import { changes, followChanges } from './live.js';
import { ShareDialog } from './share.js';
import { notify } from './toasts.js';
import { Alert } from './ui.js';
import { droppedEntries, UploadPanel, uploaded, uploadFiles, uploadTree } from './uploads.js';

/** @typedef {import('./file-table.js').Item} Item */
const PAGE = 200;

/** @param {unknown} err */
const messageOf = (err) => (err instanceof Error ? err.message : String(err));
const folderHref = (/** @type {Item} */ item) => `/folders/${item.id}`;
const fileHref = (/** @type {Item} */ item) => `/v1/files/${item.id}/content`;

/**
 * The children of one folder, page by page as they scroll into view; `reload` refetches the pages
 * already seen (after a change here or elsewhere).
 * @param {string} folderId @param {string} sort @param {string} order
 */
function useListing(folderId, sort, order) {
  const [state, setState] = useState({ total: 0, pages: /** @type {Map<number, Item[]>} */ (new Map()), loaded: false, version: 0 });
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const pending = useRef(/** @type {Set<number>} */ (new Set()));
  const generation = useRef(0);

  /** @param {number[]} pageNumbers */
  const fetchPages = useCallback(
    async (pageNumbers, fresh = false) => {
      const gen = generation.current;
      const results = await Promise.all(
        pageNumbers.map((n) =>
          api.get(`/v1/items?limit=${PAGE}&offset=${n * PAGE}&sort=${sort}&order=${order}${folderId ? `&folderId=${folderId}` : ''}`).then((page) => [n, page]),
        ),
      ).catch((err) => {
        setError(messageOf(err));
        return null;
      });
      pageNumbers.forEach((n) => pending.current.delete(n));
      if (!results || gen !== generation.current) return;
      setError(null);
      setState((old) => {
        const pages = fresh ? new Map() : new Map(old.pages);
        let total = old.total;
        for (const [n, page] of results) {
          pages.set(n, page.items);
          total = page.total;
        }
        return { total, pages, loaded: true, version: old.version + 1 };
      });
    },
    [folderId, sort, order],
  );

  useEffect(() => {
    generation.current += 1;
    pending.current.clear();
    setState({ total: 0, pages: new Map(), loaded: false, version: 0 });
    pending.current.add(0);
    void fetchPages([0], true);
  }, [fetchPages]);

  const want = useCallback(
    (/** @type {number} */ first, /** @type {number} */ last) => {
      const needed = [];
      for (let n = Math.floor(first / PAGE); n <= Math.floor(Math.max(first, last - 1) / PAGE); n += 1) {
        if (!state.pages.has(n) && !pending.current.has(n) && n * PAGE < Math.max(state.total, 1)) {
          pending.current.add(n);
          needed.push(n);
        }
      }
      if (needed.length > 0) void fetchPages(needed);
    },
    [state, fetchPages],
  );

  const reload = useCallback(() => {
    const seen = [...state.pages.keys()];
    void fetchPages(seen.length > 0 ? seen : [0], true);
  }, [state, fetchPages]);

  const itemAt = useCallback((/** @type {number} */ i) => state.pages.get(Math.floor(i / PAGE))?.[i % PAGE], [state]);
  const loadedItems = useMemo(() => [...state.pages.values()].flat(), [state]);
  return { ...state, error, want, reload, itemAt, loadedItems };
}

/** @param {{ folderId: string }} props */
export function FilesView({ folderId }) {
  const [sort, setSort] = useState('name');
  const [order, setOrder] = useState('asc');
  const listing = useListing(folderId, sort, order);
  const [path, setPath] = useState(/** @type {Array<{ id: string, name: string }>} */ ([]));
  const [pathError, setPathError] = useState(/** @type {string | null} */ (null));
  const [selected, setSelected] = useState(/** @type {Map<string, Item>} */ (new Map()));
  const [dialog, setDialog] = useState(/** @type {any} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const [query, setQuery] = useState('');
  const [dragging, setDragging] = useState(false);
  const [grid, setGrid] = useState(() => localStorage.getItem('filesync-view') === 'grid');
  const switchView = (/** @type {boolean} */ toGrid) => {
    localStorage.setItem('filesync-view', toGrid ? 'grid' : 'list');
    setGrid(toGrid);
  };
  const fileInput = useRef(/** @type {HTMLInputElement | null} */ (null));

  useEffect(() => void followChanges(), []);
  useEffect(() => {
    setSelected(new Map());
    if (!folderId) return setPath([]);
    api.get(`/v1/folders/${folderId}/path`).then(
      (res) => setPath(res.items),
      (err) => setPathError(messageOf(err)),
    );
  }, [folderId]);

  // Changes from anywhere (this page, another device, WebDAV) reload what is shown, a little later.
  const reloadRef = useRef(listing.reload);
  reloadRef.current = listing.reload;
  // At most one reload every 400 ms, however many uploads finish meanwhile (a dropped folder of thousands).
  const reloadTimer = useRef(/** @type {ReturnType<typeof setTimeout> | null} */ (null));
  useEffect(() => {
    if ((changes.value === 0 && uploaded.value === 0) || reloadTimer.current) return;
    reloadTimer.current = setTimeout(() => {
      reloadTimer.current = null;
      reloadRef.current();
    }, 400);
  }, [changes.value, uploaded.value]);
  useEffect(() => () => void (reloadTimer.current && clearTimeout(reloadTimer.current)), []);

  const title = folderId ? path[path.length - 1]?.name ?? '' : 'Files';
  useEffect(() => {
    document.title = `${title || 'Files'} – filesync`;
  }, [title]);

  /** @param {string} key */
  const onSort = (key) => {
    if (key === sort) setOrder(order === 'asc' ? 'desc' : 'asc');
    else {
      setSort(key);
      setOrder(key === 'name' ? 'asc' : 'desc');
    }
  };

  /** @param {() => Promise<unknown>} action */
  const attempt = async (action) => {
    setError(null);
    try {
      await action();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  const selectedItems = [...selected.values()];
  /** @param {Item} item */
  const actions = (item) => {
    const list = [
      { label: 'Download', run: () => (item.type === 'folder' ? attempt(async () => downloadZip([item])) : clickDownload(fileHref(item), item.name)) },
      { label: 'Rename', run: () => setDialog({ kind: 'rename', item }) },
      { label: 'Move', run: () => setDialog({ kind: 'move', items: [item] }) },
      { label: 'Delete', run: () => attempt(() => deleteItems([item], listing.reload)), danger: true },
    ];
    if (item.type === 'file') list.push({ label: 'Versions', run: () => setDialog({ kind: 'versions', item }) });
    list.push({ label: 'Share link', run: () => setDialog({ kind: 'share', item }) });
    if (item.type === 'folder') list.push({ label: 'Download as ZIP', run: () => attempt(async () => downloadZip([item])) });
    return list;
  };

  /** @param {DragEvent} e */
  const onDrop = async (e) => {
    e.preventDefault();
    setDragging(false);
    if (!e.dataTransfer) return;
    await attempt(async () => {
      const entries = await droppedEntries(e.dataTransfer);
      if (entries.some((x) => x.dirs.length > 0)) {
        await uploadTree(entries, folderId);
      } else uploadFiles(entries.map((x) => x.file), folderId);
    });
  };

  const closeDialog = () => setDialog(null);
  return html`<div class=${dragging ? 'files dragging' : 'files'}
      onDragOver=${(/** @type {DragEvent} */ e) => {
        e.preventDefault();
        setDragging(true);
      }}
      onDragLeave=${(/** @type {DragEvent} */ e) => e.currentTarget === e.target && setDragging(false)}
      onDrop=${onDrop}>
    <nav aria-label="Breadcrumb" class="breadcrumb">
      <ol>
        <li><a href="/" data-nav aria-current=${folderId ? undefined : 'page'}>Files</a></li>
        ${path.map(
          (p, i) => html`<li key=${p.id}><a href=${`/folders/${p.id}`} data-nav aria-current=${i === path.length - 1 ? 'page' : undefined}>${p.name}</a></li>`,
        )}
      </ol>
    </nav>
    <div class="heading-row">
      <h1>${title}</h1>
      <div class="toolbar">
        <input type="search" aria-label="Search files" placeholder="Search files" value=${query}
          onInput=${(/** @type {Event} */ e) => setQuery(/** @type {HTMLInputElement} */ (e.currentTarget).value)} />
        <button type="button" class="primary" onClick=${() => fileInput.current?.click()}>Upload</button>
        <input type="file" multiple ref=${fileInput} aria-label="Upload files" class="visually-hidden" tabindex="-1"
          onChange=${(/** @type {Event} */ e) => {
            const input = /** @type {HTMLInputElement} */ (e.currentTarget);
            uploadFiles(Array.from(input.files ?? []), folderId);
            input.value = '';
          }} />
        <button type="button" onClick=${() => setDialog({ kind: 'new-folder' })}>New folder</button>
        ${grid
          ? html`<button type="button" onClick=${() => switchView(false)}>List view</button>`
          : html`<button type="button" onClick=${() => switchView(true)}>Grid view</button>`}
      </div>
    </div>
    <${Alert} message=${error ?? listing.error ?? pathError} />
    ${selectedItems.length > 0 &&
    html`<div class="selection" role="region" aria-label="Selection">
      <span>${selectedItems.length} selected</span>
      <button type="button" onClick=${() => attempt(() => deleteItems(selectedItems, () => (setSelected(new Map()), listing.reload())))}>Delete</button>
      <button type="button" onClick=${() => setDialog({ kind: 'move', items: selectedItems })}>Move</button>
      <button type="button" onClick=${() => attempt(async () => downloadZip(selectedItems))}>Download as ZIP</button>
      <button type="button" onClick=${() => setSelected(new Map())}>Clear selection</button>
    </div>`}
    ${query.trim()
      ? html`<${SearchResults} query=${query.trim()} actions=${actions} />`
      : grid
        ? html`<${FileGrid} total=${listing.total} itemAt=${listing.itemAt} want=${listing.want} actions=${actions} folderHref=${folderHref} fileHref=${fileHref} />`
        : html`<${FileTable}
          total=${listing.total} itemAt=${listing.itemAt} want=${listing.want}
          sort=${sort} order=${order} onSort=${onSort}
          selected=${new Set(selected.keys())}
          onSelect=${(/** @type {Item} */ item, /** @type {boolean} */ on) => {
            const next = new Map(selected);
            if (on) next.set(item.id, item);
            else next.delete(item.id);
            setSelected(next);
          }}
          onSelectAll=${(/** @type {boolean} */ on) => setSelected(on ? new Map(listing.loadedItems.map((i) => [i.id, i])) : new Map())}
          actions=${actions} folderHref=${folderHref} fileHref=${fileHref} caption=${`Contents of ${title}`} />
        ${listing.loaded && listing.total === 0 && html`<p class="empty">This folder is empty. Drop files or folders here, or use Upload.</p>`}`}
    <${UploadPanel} />
    ${dialog?.kind === 'new-folder' &&
    html`<${NameDialog} title="New folder" button="Create" onClose=${closeDialog}
      onSubmit=${async (/** @type {string} */ name) => {
        await createFolder(folderId, name);
        listing.reload();
        notify(`Created folder ${name}`);
      }} />`}
    ${dialog?.kind === 'rename' &&
    html`<${NameDialog} title=${`Rename ${dialog.item.name}`} button="Rename" initial=${dialog.item.name} onClose=${closeDialog}
      onSubmit=${async (/** @type {string} */ name) => {
        await rename(dialog.item, name);
        listing.reload();
      }} />`}
    ${dialog?.kind === 'move' && html`<${MoveDialog} items=${dialog.items} onClose=${closeDialog} onMoved=${() => (setSelected(new Map()), listing.reload())} />`}
    ${dialog?.kind === 'versions' && html`<${VersionsDialog} item=${dialog.item} onClose=${closeDialog} onRestored=${listing.reload} />`}
    ${dialog?.kind === 'share' && html`<${ShareDialog} item=${dialog.item} onClose=${closeDialog} />`}
  </div>`;
}

/** @param {string} href @param {string} name */
function clickDownload(href, name) {
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
}

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

/** @param {{ query: string, actions: (item: Item) => any[] }} props */
function SearchResults({ query, actions }) {
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
