// What can be done to files and folders: new folder, rename, move, delete with undo, versions.
import { useEffect, useState } from 'preact/hooks';
import { api, formatBytes, newId, syncOps } from './api.js';
import { html } from './html.js';
import { notify } from './toasts.js';
import { Alert, Dialog, formatTime } from './ui.js';

/** @typedef {import('./file-table.js').Item} Item */

/** Items one archive may name (GET /v1/archive). */
const MAX_ARCHIVE_ITEMS = 200;

/**
 * Downloads the items as one ZIP streamed by the service (GET /v1/archive): a plain link the browser
 * follows with its session cookie, so the archive goes straight to the downloads, never into memory.
 * @param {Item[]} items
 */
export function downloadZip(items) {
  if (items.length > MAX_ARCHIVE_ITEMS) throw new Error(`One ZIP can hold up to ${MAX_ARCHIVE_ITEMS} selected items. Select fewer, or download their folder.`);
  const a = document.createElement('a');
  a.href = `/v1/archive?ids=${items.map((item) => item.id).join(',')}`;
  a.download = items.length === 1 && items[0]?.type === 'folder' ? `${items[0].name}.zip` : 'files.zip';
  document.body.append(a);
  a.click();
  a.remove();
}

/** @param {unknown} err */
const messageOf = (err) => (err instanceof Error ? err.message : String(err));

/**
 * A dialog with one "Name" textbox and one button.
 * @param {{ title: string, button: string, initial?: string, onSubmit: (name: string) => Promise<void>, onClose: () => void }} props
 */
export function NameDialog({ title, button, initial = '', onSubmit, onClose }) {
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const [busy, setBusy] = useState(false);
  /** @param {SubmitEvent} e */
  const submit = async (e) => {
    e.preventDefault();
    const name = String(new FormData(/** @type {HTMLFormElement} */ (e.currentTarget)).get('name') ?? '').normalize('NFC');
    if (!name.trim()) return setError('Enter a name.');
    setBusy(true);
    setError(null);
    try {
      await onSubmit(name);
      onClose();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<${Dialog} title=${title} onClose=${onClose}>
    <form onSubmit=${submit}>
      <label for="name-field">Name</label>
      <input id="name-field" name="name" defaultValue=${initial} required maxlength="255" autocomplete="off" />
      <${Alert} message=${error} />
      <div class="buttons"><button type="submit" class="primary" disabled=${busy}>${button}</button></div>
    </form>
  <//>`;
}

/** @param {string} folderId @param {string} name */
export function createFolder(folderId, name) {
  return syncOps([{ type: 'create', resourceId: newId(), payload: { resourceType: 'folder', name, parentId: folderId || null } }]);
}

/** @param {Item} item @param {string} name */
export function rename(item, name) {
  return syncOps([{ type: 'update', resourceId: item.id, payload: { name } }]);
}

/**
 * Moves to the trash at once (a folder with everything in it) and offers Undo.
 * @param {Item[]} items @param {() => void} done
 */
export async function deleteItems(items, done) {
  const files = items.filter((i) => i.type === 'file');
  const folders = items.filter((i) => i.type === 'folder');
  for (const file of files) await api.del(`/v1/files/${file.id}`);
  if (folders.length > 0) await syncOps(folders.map((f) => ({ type: 'delete', resourceId: f.id })));
  done();
  const what = items.length === 1 ? `Deleted ${items[0]?.name}` : `Deleted ${items.length} items`;
  notify(what, {
    label: 'Undo',
    run: async () => {
      try {
        for (const item of items) await api.post(`/v1/trash/${item.id}/restore`);
        notify(items.length === 1 ? `Restored ${items[0]?.name}` : `Restored ${items.length} items`);
      } catch (err) {
        notify(`Could not restore: ${messageOf(err)}`);
      }
      done();
    },
  });
}

/**
 * Choose a folder by opening folders by their names, then "Move here".
 * @param {{ items: Item[], onClose: () => void, onMoved: () => void }} props
 */
export function MoveDialog({ items, onClose, onMoved }) {
  const [path, setPath] = useState(/** @type {Array<{ id: string, name: string }>} */ ([]));
  const [folders, setFolders] = useState(/** @type {Item[] | null} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const here = path.length > 0 ? path[path.length - 1]?.id ?? '' : '';
  const moving = new Set(items.map((i) => i.id));
  useEffect(() => {
    let live = true;
    setFolders(null);
    api.get(`/v1/items?limit=1000${here ? `&folderId=${here}` : ''}`).then(
      (page) => live && setFolders(page.items.filter((/** @type {Item} */ i) => i.type === 'folder' && !moving.has(i.id))),
      (err) => live && setError(messageOf(err)),
    );
    return () => {
      live = false;
    };
  }, [here]);
  const move = async () => {
    try {
      await syncOps(items.map((i) => ({ type: 'move', resourceId: i.id, payload: { parentId: here || null } })));
      onMoved();
      onClose();
      notify(items.length === 1 ? `Moved ${items[0]?.name}` : `Moved ${items.length} items`);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const title = items.length === 1 ? `Move ${items[0]?.name}` : `Move ${items.length} items`;
  return html`<${Dialog} title=${title} onClose=${onClose}>
    <p class="move-where">Into: <strong>${['Files', ...path.map((p) => p.name)].join(' / ')}</strong></p>
    ${path.length > 0 && html`<button type="button" onClick=${() => setPath(path.slice(0, -1))}>Up one level</button>`}
    ${folders === null
      ? html`<p role="status">Loading…</p>`
      : folders.length === 0
        ? html`<p>No folders in here.</p>`
        : html`<ul class="folder-list">
            ${folders.map((f) => html`<li key=${f.id}><button type="button" class="folder-open" onClick=${() => setPath([...path, { id: f.id, name: f.name }])}>${f.name}</button></li>`)}
          </ul>`}
    <${Alert} message=${error} />
    <div class="buttons"><button type="button" class="primary" onClick=${move}>Move here</button></div>
  <//>`;
}

/** @param {{ item: Item, onClose: () => void, onRestored: () => void }} props */
export function VersionsDialog({ item, onClose, onRestored }) {
  const [versions, setVersions] = useState(/** @type {any[] | null} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const load = () =>
    api.get(`/v1/files/${item.id}/versions?limit=1000`).then(
      (page) => setVersions(page.items),
      (err) => setError(messageOf(err)),
    );
  useEffect(() => void load(), []);
  /** @param {any} version */
  const restore = async (version) => {
    try {
      await api.post(`/v1/files/${item.id}/versions/${version.id}/restore`);
      notify(`Restored the version of ${formatTime(version.createdAt)}`);
      onRestored();
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return html`<${Dialog} title=${`Versions of ${item.name}`} onClose=${onClose} wide>
    <${Alert} message=${error} />
    ${versions === null
      ? html`<p role="status">Loading…</p>`
      : versions.length === 0
        ? html`<p>No earlier versions: this file has not been replaced since it was uploaded.</p>`
        : html`<table class="plain">
            <thead><tr><th scope="col">Written</th><th scope="col">Size</th><th scope="col">Device</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              ${versions.map(
                (v) => html`<tr key=${v.id}>
                  <td>${formatTime(v.createdAt)}</td>
                  <td>${formatBytes(v.size)}</td>
                  <td>${v.deviceName ?? (v.deviceId ? v.deviceId.slice(0, 8) : 'unknown')}</td>
                  <td class="buttons-cell">
                    <button type="button" onClick=${() => restore(v)}>Restore</button>
                    <a href=${`/v1/files/${item.id}/versions/${v.id}/content`} download=${item.name}>Download</a>
                  </td>
                </tr>`,
              )}
            </tbody>
          </table>`}
  <//>`;
}
