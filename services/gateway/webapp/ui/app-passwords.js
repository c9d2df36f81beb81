// "App passwords": passwords for WebDAV and other apps, each revocable on its own.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import { session } from './session.js';
import { notify } from './toasts.js';
import { Alert, formatTime } from './ui.js';

/** @param {unknown} err */
const messageOf = (err) => (err instanceof Error ? err.message : String(err));

export function AppPasswordsView() {
  const [items, setItems] = useState(/** @type {any[] | null} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const [created, setCreated] = useState(/** @type {any} */ (null));
  const load = () =>
    api.get('/v1/app-passwords').then(
      (res) => setItems(res.items),
      (err) => setError(messageOf(err)),
    );
  useEffect(() => {
    document.title = 'App passwords – filesync';
    void load();
  }, []);

  /** @param {SubmitEvent} e */
  const create = async (e) => {
    e.preventDefault();
    const formEl = /** @type {HTMLFormElement} */ (e.currentTarget);
    const form = new FormData(formEl);
    setError(null);
    try {
      const made = await api.post('/v1/app-passwords', { name: String(form.get('name') ?? ''), currentPassword: String(form.get('current') ?? '') });
      setCreated(made);
      formEl.reset();
      await load();
    } catch (err) {
      setError(/** @type {any} */ (err).status === 403 ? 'The current password is wrong.' : messageOf(err));
    }
  };
  /** @param {any} item */
  const revoke = async (item) => {
    try {
      await api.del(`/v1/app-passwords/${item.id}`);
      notify(`Revoked ${item.name}`);
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const davUrl = `${location.origin}/dav/`;
  return html`<section>
    <h1>App passwords</h1>
    <p class="hint">Give each app (a WebDAV client, a phone app) its own password, so you can revoke one without changing your account password.</p>
    <${Alert} message=${error} />
    ${created &&
    html`<div class="created-secret" role="status">
      <p>The password for <strong>${created.name}</strong> is shown only this once:</p>
      <p><code class="secret">${created.password}</code></p>
      <p>Use it with the username <strong>${session.value?.user.username}</strong> at the WebDAV address <code>${davUrl}</code>.</p>
    </div>`}
    <form onSubmit=${create} class="narrow">
      <h2>New app password</h2>
      <label for="ap-name">Name</label>
      <input id="ap-name" name="name" required maxlength="100" placeholder="e.g. Phone, rclone" />
      <label for="ap-current">Current password</label>
      <input id="ap-current" name="current" type="password" autocomplete="current-password" required />
      <div class="buttons"><button type="submit" class="primary">Create app password</button></div>
    </form>
    <h2>Your app passwords</h2>
    ${items === null
      ? !error && html`<p role="status">Loading…</p>`
      : items.length === 0
        ? html`<p class="empty">No app passwords yet.</p>`
        : html`<div class="table-wrap"><table class="plain">
            <caption class="visually-hidden">Your app passwords</caption>
            <thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              ${items.map(
                (p) => html`<tr key=${p.id}>
                  <td>${p.name}</td>
                  <td>${formatTime(p.createdAt)}</td>
                  <td>${p.lastUsedAt ? formatTime(p.lastUsedAt) : 'Never'}</td>
                  <td><button type="button" aria-label=${`Revoke ${p.name}`} onClick=${() => revoke(p)}>Revoke</button></td>
                </tr>`,
              )}
            </tbody>
          </table></div>`}
  </section>`;
}
