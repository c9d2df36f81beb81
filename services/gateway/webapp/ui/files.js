// "Files": one folder's children with breadcrumbs, sorting, search, uploads, live updates.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, messageOf } from './api.js';
import { FileGrid } from './file-grid.js';
import { FileTable } from './file-table.js';
import { createFolder, deleteItems, downloadZip, MoveDialog, NameDialog, rename, VersionsDialog } from './file-actions.js';
import { html } from './html.js';
import { useListing } from './listing.js';
import { changes, followChanges } from './live.js';
import { SearchResults } from './search-results.js';
import { ShareDialog } from './share.js';
import { notify } from './toasts.js';
import { Alert } from './ui.js';
import { droppedEntries, UploadPanel, uploaded, uploadFiles, uploadTree } from './uploads.js';

/** @typedef {import('./file-table.js').Item} Item */
const folderHref = (/** @type {Item} */ item) => `/folders/${item.id}`;
const fileHref = (/** @type {Item} */ item) => `/v1/files/${item.id}/content`;

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
      ? html`<${SearchResults} query=${query.trim()} actions=${actions} folderHref=${folderHref} fileHref=${fileHref} />`
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

