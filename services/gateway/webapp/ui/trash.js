// "Trash": what was deleted, from where and when; restore it or delete it for good.
import { useEffect, useState } from 'preact/hooks';
import { api, formatBytes } from './api.js';
import { html } from './html.js';
import { changes, followChanges } from './live.js';
import { notify } from './toasts.js';
import { Alert, Dialog, formatTime } from './ui.js';

/** @param {unknown} err */
const messageOf = (err) => (err instanceof Error ? err.message : String(err));

/** @param {{ id: string }} props */
function OriginalFolder({ id }) {
  const [name, setName] = useState('');
  useEffect(() => {
    if (!id) return setName('Files');
    api.get(`/v1/folders/${id}/path`, { quiet401: true }).then(
      (res) => setName(['Files', ...res.items.map((/** @type {any} */ p) => p.name)].join(' / ')),
      () => setName('a deleted folder'),
    );
  }, [id]);
  return html`<span>${name}</span>`;
}

export function TrashView() {
  const [items, setItems] = useState(/** @type {any[] | null} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const [confirm, setConfirm] = useState(/** @type {any} */ (null));
  const load = () =>
    api.get('/v1/trash?limit=1000').then(
      (page) => setItems(page.items),
      (err) => setError(messageOf(err)),
    );
  useEffect(() => void followChanges(), []);
  useEffect(() => {
    document.title = 'Trash – filesync';
    void load();
  }, [changes.value]);

  /** @param {any} item */
  const restore = async (item) => {
    try {
      await api.post(`/v1/trash/${item.id}/restore`);
      notify(`Restored ${item.name}`);
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const purge = async () => {
    const item = confirm;
    setConfirm(null);
    try {
      await api.del(`/v1/trash/${item.id}`);
      notify(`Deleted ${item.name} forever`);
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  return html`<section>
    <h1>Trash</h1>
    <p class="hint">Deleted files and folders stay here for a while, then are removed for good.</p>
    <${Alert} message=${error} />
    ${items === null
      ? html`<p role="status">Loading…</p>`
      : items.length === 0
        ? html`<p class="empty">The trash is empty.</p>`
        : html`<div class="table-wrap"><table class="plain">
            <caption class="visually-hidden">Deleted files and folders</caption>
            <thead><tr><th scope="col">Name</th><th scope="col">Was in</th><th scope="col">Deleted</th><th scope="col">Size</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              ${items.map(
                (item) => html`<tr key=${item.id}>
                  <td><span class=${item.type === 'folder' ? 'kind folder' : 'kind file'} aria-hidden="true"></span>${item.name}</td>
                  <td><${OriginalFolder} id=${item.type === 'folder' ? item.parentId : item.folderId} /></td>
                  <td>${formatTime(item.deletedAt)}</td>
                  <td>${item.type === 'file' ? formatBytes(item.size) : ''}</td>
                  <td class="buttons-cell">
                    <button type="button" aria-label=${`Restore ${item.name}`} onClick=${() => restore(item)}>Restore</button>
                    <button type="button" class="danger" onClick=${() => setConfirm(item)}>Delete <span class="visually-hidden">${item.name} </span>forever</button>
                  </td>
                </tr>`,
              )}
            </tbody>
          </table></div>`}
    ${confirm &&
    html`<${Dialog} title=${`Delete ${confirm.name} forever?`} onClose=${() => setConfirm(null)}>
      <p>${confirm.type === 'folder' ? 'The folder and everything in it' : 'The file and its versions'} will be removed for good. This cannot be undone.</p>
      <div class="buttons">
        <button type="button" onClick=${() => setConfirm(null)}>Keep it</button>
        <button type="button" class="danger primary" onClick=${purge}>Delete forever</button>
      </div>
    <//>`}
  </section>`;
}
