// "Users" (administrators): accounts with their usage and quota; create, set quota, delete.
import { useEffect, useState } from 'preact/hooks';
import { api, formatBytes } from './api.js';
import { html } from './html.js';
import { notify } from './toasts.js';
import { Alert, Dialog } from './ui.js';

/** @param {unknown} err */
const messageOf = (err) => (err instanceof Error ? err.message : String(err));

/** "10 GB", "500 MB", "1.5 TB" or bytes; empty means no quota. @param {string} text */
function parseSize(text) {
  const match = /^\s*(\d+(?:[.,]\d+)?)\s*(b|kb|mb|gb|tb)?\s*$/i.exec(text);
  if (!match) return undefined;
  const units = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12 };
  return Math.round(Number(match[1]?.replace(',', '.')) * units[/** @type {'b'} */ ((match[2] ?? 'b').toLowerCase())]);
}

export function UsersView() {
  const [users, setUsers] = useState(/** @type {any[] | null} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const [quotaFor, setQuotaFor] = useState(/** @type {any} */ (null));
  const [deleting, setDeleting] = useState(/** @type {any} */ (null));
  const load = () =>
    api.get('/v1/users?limit=1000').then(
      (page) => setUsers(page.items),
      (err) => setError(messageOf(err)),
    );
  useEffect(() => {
    document.title = 'Users – filesync';
    void load();
  }, []);

  /** @param {SubmitEvent} e */
  const create = async (e) => {
    e.preventDefault();
    const formEl = /** @type {HTMLFormElement} */ (e.currentTarget);
    const form = new FormData(formEl);
    /** @type {Record<string, unknown>} */
    const body = { username: form.get('username'), password: form.get('password'), isAdmin: form.get('admin') === 'on' };
    const email = String(form.get('email') ?? '');
    if (email) body.email = email;
    setError(null);
    try {
      await api.post('/v1/users', body);
      notify(`Created ${body.username}`);
      formEl.reset();
      await load();
    } catch (err) {
      setError(/** @type {any} */ (err).code === 'NAME_CONFLICT' ? 'That username is already taken.' : messageOf(err));
    }
  };
  /** @param {SubmitEvent} e */
  const setQuota = async (e) => {
    e.preventDefault();
    const text = String(new FormData(/** @type {HTMLFormElement} */ (e.currentTarget)).get('quota') ?? '');
    const bytes = text.trim() === '' ? null : parseSize(text);
    if (bytes === undefined) return setError('Write the quota as a size, for example 10 GB, or leave it empty for no limit.');
    try {
      await api.patch(`/v1/users/${quotaFor.id}`, { quotaBytes: bytes });
      setQuotaFor(null);
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const remove = async () => {
    const user = deleting;
    setDeleting(null);
    try {
      await api.del(`/v1/users/${user.id}`);
      notify(`Deleted ${user.username}`);
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  return html`<section>
    <h1>Users</h1>
    <${Alert} message=${error} />
    ${users === null
      ? !error && html`<p role="status">Loading…</p>`
      : html`<div class="table-wrap"><table class="plain">
          <caption class="visually-hidden">Users</caption>
          <thead><tr><th scope="col">Username</th><th scope="col">Email</th><th scope="col">Used</th><th scope="col">Quota</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            ${users.map(
              (u) => html`<tr key=${u.id}>
                <td>${u.username}${u.isAdmin && html` <span class="badge">Administrator</span>`}</td>
                <td>${u.email ?? ''}</td>
                <td>${formatBytes(u.usedBytes ?? 0)}</td>
                <td>${u.quotaBytes === null || u.quotaBytes === undefined ? 'No limit' : formatBytes(u.quotaBytes)}</td>
                <td class="buttons-cell">
                  <button type="button" aria-label=${`Set quota for ${u.username}`} onClick=${() => setQuotaFor(u)}>Set quota</button>
                  <button type="button" class="danger" aria-label=${`Delete ${u.username}`} onClick=${() => setDeleting(u)}>Delete</button>
                </td>
              </tr>`,
            )}
          </tbody>
        </table></div>`}
    <form onSubmit=${create} class="narrow">
      <h2>New user</h2>
      <label for="nu-username">Username</label>
      <input id="nu-username" name="username" required minlength="3" maxlength="64" pattern="[A-Za-z0-9._\\-]+" autocomplete="off" />
      <label for="nu-password">Password</label>
      <input id="nu-password" name="password" type="password" required minlength="8" autocomplete="new-password" />
      <label for="nu-email">Email</label>
      <input id="nu-email" name="email" type="email" autocomplete="off" />
      <label class="check"><input type="checkbox" name="admin" /> Administrator</label>
      <div class="buttons"><button type="submit" class="primary">Create user</button></div>
    </form>
    ${quotaFor &&
    html`<${Dialog} title=${`Quota for ${quotaFor.username}`} onClose=${() => setQuotaFor(null)}>
      <form onSubmit=${setQuota}>
        <label for="quota-field">Quota</label>
        <input id="quota-field" name="quota" defaultValue=${quotaFor.quotaBytes ? formatBytes(quotaFor.quotaBytes) : ''} placeholder="e.g. 10 GB; empty for no limit" />
        <div class="buttons"><button type="submit" class="primary">Save quota</button></div>
      </form>
    <//>`}
    ${deleting &&
    html`<${Dialog} title=${`Delete ${deleting.username}?`} onClose=${() => setDeleting(null)}>
      <p>The account and everything it stores will be removed. This cannot be undone.</p>
      <div class="buttons">
        <button type="button" onClick=${() => setDeleting(null)}>Keep the account</button>
        <button type="button" class="danger primary" onClick=${remove}>Delete user</button>
      </div>
    <//>`}
  </section>`;
}
