// "Account": storage used (files, trash, versions) and changing the password.
import { useEffect, useState } from 'preact/hooks';
import { api, formatBytes } from './api.js';
import { html } from './html.js';
import { session } from './session.js';
import { Alert } from './ui.js';

/** @param {unknown} err */
const messageOf = (err) => (err instanceof Error ? err.message : String(err));

export function AccountView() {
  const [usage, setUsage] = useState(/** @type {any} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const [pwError, setPwError] = useState(/** @type {string | null} */ (null));
  const [pwDone, setPwDone] = useState(false);
  useEffect(() => {
    document.title = 'Account – filesync';
    api.get('/v1/users/me/usage').then(setUsage, (err) => setError(messageOf(err)));
  }, []);

  /** @param {SubmitEvent} e */
  const changePassword = async (e) => {
    e.preventDefault();
    const formEl = /** @type {HTMLFormElement} */ (e.currentTarget);
    const form = new FormData(formEl);
    setPwError(null);
    setPwDone(false);
    try {
      await api.patch('/v1/users/me/password', { current_password: form.get('current'), new_password: form.get('new') });
      formEl.reset();
      setPwDone(true);
    } catch (err) {
      setPwError(/** @type {any} */ (err).status === 403 ? 'The current password is wrong.' : messageOf(err));
    }
  };

  const quota = usage?.quotaBytes ?? null;
  const used = usage?.usedBytes ?? 0;
  const words = quota === null ? `${formatBytes(used)} used, no limit` : `${formatBytes(used)} of ${formatBytes(quota)}`;
  return html`<section class="account">
    <h1>Account</h1>
    <p>Signed in as <strong>${session.value?.user.username}</strong>.</p>
    <h2>Storage</h2>
    <${Alert} message=${error} />
    ${usage &&
    html`<div class="usage">
      ${quota === null
        ? // No quota, so no bar: a bar needs a maximum, and any chosen one would draw a full or an arbitrary bar.
          // Still a meter for assistive technology, which reads its value text: the bytes used, in words.
          html`<span id="storage-label">Storage used</span>
            <p class="usage-words" role="meter" aria-labelledby="storage-label" aria-valuemin="0" aria-valuemax=${Math.max(used, 1)} aria-valuenow=${used} aria-valuetext=${words}>${words}</p>`
        : html`<label for="storage-meter">Storage used</label>
            <meter id="storage-meter" min="0" max=${quota} value=${used} aria-valuetext=${words}></meter>
            <p class="usage-words">${words}</p>`}
      <ul class="usage-parts">
        <li>Files: ${formatBytes(usage.filesBytes)}</li>
        <li>Trash: ${formatBytes(usage.trashBytes)}</li>
        <li>Versions: ${formatBytes(usage.versionsBytes)}</li>
        ${usage.uploadsBytes > 0 && html`<li>Unfinished uploads: ${formatBytes(usage.uploadsBytes)}</li>`}
      </ul>
    </div>`}
    <h2>Change password</h2>
    <form onSubmit=${changePassword} class="narrow">
      <label for="pw-current">Current password</label>
      <input id="pw-current" name="current" type="password" autocomplete="current-password" required />
      <label for="pw-new">New password</label>
      <input id="pw-new" name="new" type="password" autocomplete="new-password" minlength="8" required />
      <${Alert} message=${pwError} />
      ${pwDone && html`<p role="status">Your password has been changed.</p>`}
      <div class="buttons"><button type="submit" class="primary">Change password</button></div>
    </form>
  </section>`;
}
