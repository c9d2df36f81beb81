// Who is signed in. The session itself is an HttpOnly cookie the page never sees.
import { signal } from '@preact/signals';
import { api, request, whenSignedOut } from './api.js';
import { stopChanges } from './live.js';

/** @type {import('@preact/signals').Signal<{ user: { id: string, username: string, isAdmin: boolean }, deviceId: string } | null | undefined>} */
export const session = signal(undefined);

export async function loadSession() {
  try {
    session.value = await api.get('/v1/session', { quiet401: true });
  } catch {
    session.value = null;
  }
}

/** @param {string} username @param {string} password */
export async function signIn(username, password) {
  session.value = await request('POST', '/v1/session', { json: { username, password }, quiet401: true });
}

export async function signOut() {
  stopChanges();
  try {
    await api.del('/v1/session');
  } finally {
    session.value = null;
  }
}

whenSignedOut(() => {
  stopChanges();
  session.value = null;
});
