// The filesync web app: sign-in, then files, trash, devices, app passwords, account and users.
import { render } from 'preact';
import { html } from './html.js';
import { route, parseRoute } from './router.js';
import { loadSession, session, signOut } from './session.js';
import { SignIn } from './signin.js';
import { FilesView } from './files.js';
import { TrashView } from './trash.js';
import { AccountView } from './account.js';
import { DevicesView } from './devices.js';
import { AppPasswordsView } from './app-passwords.js';
import { UsersView } from './users.js';
import { SharedView } from './shared-page.js';
import { Toasts } from './toasts.js';

const VIEWS = [
  ['files', '/', 'Files'],
  ['trash', '/trash', 'Trash'],
  ['devices', '/devices', 'Devices'],
  ['app-passwords', '/app-passwords', 'App passwords'],
  ['account', '/account', 'Account'],
];

function Shell() {
  const current = parseRoute(route.value);
  const user = session.value?.user;
  const links = user?.isAdmin ? [...VIEWS, ['users', '/users', 'Users']] : VIEWS;
  let view;
  switch (current.view) {
    case 'trash':
      view = html`<${TrashView} />`;
      break;
    case 'devices':
      view = html`<${DevicesView} />`;
      break;
    case 'app-passwords':
      view = html`<${AppPasswordsView} />`;
      break;
    case 'account':
      view = html`<${AccountView} />`;
      break;
    case 'users':
      view = user?.isAdmin ? html`<${UsersView} />` : html`<${FilesView} folderId="" />`;
      break;
    default:
      view = html`<${FilesView} folderId=${current.folderId ?? ''} key="files" />`;
  }
  return html`<div class="shell">
    <header class="top">
      <span class="brand">filesync</span>
      <nav aria-label="Main">
        <ul>
          ${links.map(
            ([id, href, label]) =>
              html`<li><a href=${href} data-nav aria-current=${current.view === id ? 'page' : undefined}>${label}</a></li>`,
          )}
        </ul>
      </nav>
      <span class="who">${user?.username}</span>
      <button type="button" onClick=${() => signOut()}>Sign out</button>
    </header>
    <main id="main">${view}</main>
    <${Toasts} />
  </div>`;
}

function App() {
  const current = parseRoute(route.value);
  if (current.view === 'share') return html`<${SharedView} token=${current.token} />`;
  if (session.value === undefined) return html`<p class="loading" role="status">Loading…</p>`;
  if (session.value === null) return html`<${SignIn} />`;
  return html`<${Shell} />`;
}

const root = document.getElementById('app');
if (root) render(html`<${App} />`, root);
if (!location.pathname.startsWith('/s/')) void loadSession();
