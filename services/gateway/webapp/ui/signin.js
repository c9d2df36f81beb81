import { useState } from 'preact/hooks';
import { ApiError } from './api.js';
import { html } from './html.js';
import { signIn } from './session.js';
import { Alert } from './ui.js';

export function SignIn() {
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const [busy, setBusy] = useState(false);
  /** @param {SubmitEvent} e */
  const submit = async (e) => {
    e.preventDefault();
    const form = new FormData(/** @type {HTMLFormElement} */ (e.currentTarget));
    setBusy(true);
    setError(null);
    try {
      await signIn(String(form.get('username') ?? ''), String(form.get('password') ?? ''));
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'Wrong username or password.' : err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <h1>Sign in to filesync</h1>
    <form onSubmit=${submit}>
      <label for="signin-username">Username</label>
      <input id="signin-username" name="username" autocomplete="username" required autofocus />
      <label for="signin-password">Password</label>
      <input id="signin-password" name="password" type="password" autocomplete="current-password" required />
      <${Alert} message=${error} />
      <button type="submit" class="primary" disabled=${busy}>Sign in</button>
    </form>
  </main>`;
}
