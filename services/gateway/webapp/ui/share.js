// Share links from the owner's side: create one (read, or upload for a folder; password, expiry,
// download limit), copy its address, revoke existing ones.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import { notify } from './toasts.js';
import { Alert, Dialog, formatTime } from './ui.js';

/** @typedef {import('./file-table.js').Item} Item */
/** @param {unknown} err */
const messageOf = (err) => (err instanceof Error ? err.message : String(err));

/** @param {{ item: Item, onClose: () => void }} props */
export function ShareDialog({ item, onClose }) {
  const [links, setLinks] = useState(/** @type {any[] | null} */ (null));
  const [created, setCreated] = useState(/** @type {any} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const load = () =>
    api.get(`/v1/links?limit=1000&resourceId=${item.id}`).then(
      (page) => setLinks(page.items),
      (err) => setError(messageOf(err)),
    );
  useEffect(() => void load(), []);

  /** @param {SubmitEvent} e */
  const create = async (e) => {
    e.preventDefault();
    const form = new FormData(/** @type {HTMLFormElement} */ (e.currentTarget));
    /** @type {Record<string, unknown>} */
    const body = { resourceId: item.id, access: form.get('access') === 'upload' ? 'upload' : 'read' };
    const password = String(form.get('password') ?? '');
    if (password) body.password = password;
    const expires = String(form.get('expires') ?? '');
    if (expires) body.expiresAt = new Date(`${expires}T23:59:59`).toISOString();
    const limit = String(form.get('limit') ?? '');
    if (limit && body.access === 'read') body.maxDownloads = Number(limit);
    setError(null);
    try {
      const link = await api.post('/v1/links', body);
      setCreated(link);
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  /** @param {any} link */
  const revoke = async (link) => {
    try {
      await api.del(`/v1/links/${link.id}`);
      if (created?.id === link.id) setCreated(null);
      notify('Link revoked');
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(created.url);
      notify('Link copied');
    } catch {
      const field = /** @type {HTMLInputElement | null} */ (document.getElementById('share-link-url'));
      field?.select();
      notify('Press Ctrl+C to copy the selected link');
    }
  };

  const today = new Date().toISOString().slice(0, 10);
  return html`<${Dialog} title=${`Share ${item.name}`} onClose=${onClose} wide>
    <form onSubmit=${create} class="share-form">
      ${item.type === 'folder' &&
      html`<fieldset>
        <legend>Access</legend>
        <label><input type="radio" name="access" value="read" checked aria-describedby="share-read-hint" /> Read</label>
        <p id="share-read-hint" class="hint">People with the link can view and download.</p>
        <label><input type="radio" name="access" value="upload" aria-describedby="share-upload-hint" /> Upload</label>
        <p id="share-upload-hint" class="hint">People with the link can add files, and see nothing.</p>
      </fieldset>`}
      <label for="share-password">Password</label>
      <input id="share-password" name="password" type="password" autocomplete="new-password" minlength="8" placeholder="Optional, 8 characters or more" />
      <label for="share-expires">Expires on</label>
      <input id="share-expires" name="expires" type="date" min=${today} />
      <label for="share-limit">Download limit</label>
      <input id="share-limit" name="limit" type="number" min="1" step="1" placeholder="No limit" />
      <div class="buttons"><button type="submit" class="primary">Create link</button></div>
    </form>
    <${Alert} message=${error} />
    ${created &&
    html`<div class="created-link">
      <label for="share-link-url">Link</label>
      <div class="copy-row">
        <input id="share-link-url" readonly value=${created.url} onFocus=${(/** @type {Event} */ e) => /** @type {HTMLInputElement} */ (e.currentTarget).select()} />
        <button type="button" onClick=${copy}>Copy link</button>
      </div>
    </div>`}
    <h3>Existing links</h3>
    ${links === null
      ? html`<p role="status">Loading…</p>`
      : links.length === 0
        ? html`<p>No links yet.</p>`
        : html`<ul class="link-list">
            ${links.map(
              (l) => html`<li key=${l.id}>
                <span>${l.access === 'upload' ? 'Upload' : 'Read'} link${l.hasPassword ? ', with password' : ''}${l.expiresAt ? `, expires ${formatTime(l.expiresAt)}` : ''}${
                  l.maxDownloads ? `, ${l.downloads} of ${l.maxDownloads} downloads` : ''
                }, created ${formatTime(l.createdAt)}</span>
                <button type="button" onClick=${() => revoke(l)}>Revoke</button>
              </li>`,
            )}
          </ul>`}
  <//>`;
}
