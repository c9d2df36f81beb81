// "Devices": where this account is signed in; signing a device out ends its session everywhere.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import { notify } from './toasts.js';
import { Alert, formatTime } from './ui.js';

/** @param {unknown} err */
const messageOf = (err) => (err instanceof Error ? err.message : String(err));

export function DevicesView() {
  const [devices, setDevices] = useState(/** @type {any[] | null} */ (null));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  const load = () =>
    api.get('/v1/devices').then(
      (res) => setDevices(res.items),
      (err) => setError(messageOf(err)),
    );
  useEffect(() => {
    document.title = 'Devices – filesync';
    void load();
  }, []);
  /** @param {any} device */
  const signOut = async (device) => {
    try {
      await api.del(`/v1/devices/${device.id}`);
      notify(`Signed out ${device.name}`);
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return html`<section>
    <h1>Devices</h1>
    <p class="hint">Computers, phones and browsers signed in to your account. Sign out one you no longer use or have lost.</p>
    <${Alert} message=${error} />
    ${devices === null
      ? !error && html`<p role="status">Loading…</p>`
      : html`<div class="table-wrap"><table class="plain">
          <caption class="visually-hidden">Your devices</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Platform</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            ${devices.map(
              (d) => html`<tr key=${d.id}>
                <td>${d.name}${d.current && html` <strong class="badge">This device</strong>`}</td>
                <td>${d.platform ?? ''}</td>
                <td>${d.lastUsedAt ? formatTime(d.lastUsedAt) : 'Never'}</td>
                <td>${!d.current &&
                html`<button type="button" aria-label=${`Sign out ${d.name}`} onClick=${() => signOut(d)}>Sign out</button>`}</td>
              </tr>`,
            )}
          </tbody>
        </table></div>`}
  </section>`;
}
