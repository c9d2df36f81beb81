// The public page of a share link, /s/<token>: a file to download, a folder to browse and download
// as a ZIP, or an upload area. Only the public API under /v1/public/<token>; no session needed.
import { useEffect, useState } from 'preact/hooks';
import { formatBytes, humanMessage } from './api.js';
import { html } from './html.js';
import { Alert, formatTime } from './ui.js';

/** @param {string} token @param {string} path @param {string} access @param {RequestInit} [init] */
async function call(token, path, access, init = {}) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  if (access) headers.authorization = `Bearer ${access}`;
  let res;
  try {
    res = await fetch(`/v1/public/${token}${path}`, { ...init, headers: { ...headers, ...(init.headers ?? {}) }, credentials: 'omit' });
  } catch {
    throw Object.assign(new Error('The service cannot be reached. Check your connection and try again.'), { status: 0 });
  }
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const message = res.status === 404 ? 'This link does not exist, has expired or was revoked.' : humanMessage(res.status, body);
    throw Object.assign(new Error(message), { status: res.status, code: body?.error?.code });
  }
  return body;
}

/** @param {{ token: string }} props */
export function SharedView({ token }) {
  const [info, setInfo] = useState(/** @type {any} */ (null));
  const [access, setAccess] = useState(() => sessionStorage.getItem(`filesync-link-${token}`) ?? '');
  const [error, setError] = useState(/** @type {string | null} */ (null));
  useEffect(() => {
    call(token, '', '').then(
      (res) => {
        setInfo(res);
        document.title = `${res.resource.name} – filesync`;
      },
      (err) => setError(err.message),
    );
  }, [token]);

  /** @param {SubmitEvent} e */
  const unlock = async (e) => {
    e.preventDefault();
    const password = String(new FormData(/** @type {HTMLFormElement} */ (e.currentTarget)).get('password') ?? '');
    setError(null);
    try {
      const res = await call(token, '/unlock', '', { method: 'POST', body: JSON.stringify({ password }), headers: { 'content-type': 'application/json' } });
      sessionStorage.setItem(`filesync-link-${token}`, res.access);
      setAccess(res.access);
    } catch (err) {
      setError(/** @type {any} */ (err).status === 401 ? 'Wrong password.' : /** @type {Error} */ (err).message);
    }
  };

  let body;
  if (!info) body = error ? null : html`<p role="status">Loading…</p>`;
  else if (info.hasPassword && !access)
    body = html`<form onSubmit=${unlock} class="narrow">
      <p>This link is protected by a password.</p>
      <label for="link-password">Password</label>
      <input id="link-password" name="password" type="password" required autofocus />
      <div class="buttons"><button type="submit" class="primary">Open</button></div>
    </form>`;
  else if (info.access === 'upload') body = html`<${LinkUpload} token=${token} access=${access} info=${info} />`;
  else if (info.resource.type === 'file')
    body = html`<div class="shared-file">
      <h1>${info.resource.name}</h1>
      <p>${formatBytes(info.resource.size)}</p>
      <a class="button primary" href=${`/v1/public/${token}/content${access ? `?access=${encodeURIComponent(access)}` : ''}`} download=${info.resource.name}>Download</a>
    </div>`;
  else body = html`<${LinkFolder} token=${token} access=${access} info=${info} onError=${setError} />`;
  return html`<div class="shell public">
    <header class="top"><span class="brand">filesync</span><span class="hint">Shared with you</span></header>
    <main id="main">
      ${error && !info && html`<h1>Link not available</h1>`}
      <${Alert} message=${error} />
      ${body}
    </main>
  </div>`;
}

/** @param {{ token: string, access: string, info: any, onError: (m: string) => void }} props */
function LinkFolder({ token, access, info, onError }) {
  const [path, setPath] = useState(/** @type {Array<{ id: string, name: string }>} */ ([]));
  const [page, setPage] = useState(/** @type {any} */ (null));
  const here = path[path.length - 1]?.id ?? '';
  useEffect(() => {
    setPage(null);
    call(token, `/items?limit=1000${here ? `&folderId=${here}` : ''}`, access).then(setPage, (err) => onError(err.message));
  }, [here]);
  const q = access ? `access=${encodeURIComponent(access)}` : '';
  const content = (/** @type {string} */ id) => `/v1/public/${token}/content?fileId=${id}${q ? `&${q}` : ''}`;
  const zip = `/v1/public/${token}/archive${here ? `?folderId=${here}${q ? `&${q}` : ''}` : q ? `?${q}` : ''}`;
  return html`<div>
    <nav aria-label="Breadcrumb" class="breadcrumb">
      <ol>
        <li><a href="#" onClick=${(/** @type {Event} */ e) => (e.preventDefault(), setPath([]))} aria-current=${path.length === 0 ? 'page' : undefined}>${info.resource.name}</a></li>
        ${path.map(
          (p, i) => html`<li key=${p.id}><a href="#" onClick=${(/** @type {Event} */ e) => (e.preventDefault(), setPath(path.slice(0, i + 1)))}
            aria-current=${i === path.length - 1 ? 'page' : undefined}>${p.name}</a></li>`,
        )}
      </ol>
    </nav>
    <div class="heading-row">
      <h1>${path.length ? path[path.length - 1]?.name : info.resource.name}</h1>
      <div class="toolbar"><a class="button" href=${zip} download>Download as ZIP</a></div>
    </div>
    ${page === null
      ? html`<p role="status">Loading…</p>`
      : html`<div class="table-wrap"><table class="plain">
          <caption class="visually-hidden">Shared folder contents</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Size</th><th scope="col">Modified</th></tr></thead>
          <tbody>
            ${page.items.map(
              (/** @type {any} */ item) => html`<tr key=${item.id}>
                <td>${item.type === 'folder'
                  ? html`<a href="#" onClick=${(/** @type {Event} */ e) => (e.preventDefault(), setPath([...path, { id: item.id, name: item.name }]))}>${item.name}</a>`
                  : html`<a href=${content(item.id)} download=${item.name}>${item.name}</a>`}</td>
                <td>${item.type === 'file' ? formatBytes(item.size) : ''}</td>
                <td>${formatTime(item.updatedAt)}</td>
              </tr>`,
            )}
          </tbody>
        </table></div>`}
  </div>`;
}

/** @param {{ token: string, access: string, info: any }} props */
function LinkUpload({ token, access, info }) {
  const [sent, setSent] = useState(/** @type {Array<{ name: string, size: number }>} */ ([]));
  const [busy, setBusy] = useState(/** @type {string[]} */ ([]));
  const [error, setError] = useState(/** @type {string | null} */ (null));
  /** @param {File[]} files */
  const send = async (files) => {
    setError(null);
    for (const file of files) {
      setBusy((b) => [...b, file.name]);
      try {
        const form = new FormData();
        form.append('file', file, file.name);
        const res = await call(token, '/files', access, { method: 'POST', body: form });
        setSent((s) => [...s, res]);
      } catch (err) {
        setError(`${file.name}: ${/** @type {Error} */ (err).message}`);
      } finally {
        setBusy((b) => b.filter((n) => n !== file.name));
      }
    }
  };
  return html`<div class="link-upload"
      onDragOver=${(/** @type {DragEvent} */ e) => e.preventDefault()}
      onDrop=${(/** @type {DragEvent} */ e) => (e.preventDefault(), void send(Array.from(e.dataTransfer?.files ?? [])))}>
    <h1>Send files to ${info.resource.name}</h1>
    <p>Choose files or drop them here. You will not see what others have sent.</p>
    <input id="link-upload-input" type="file" multiple aria-label="Upload files" class="visually-hidden"
      onChange=${(/** @type {Event} */ e) => {
        const input = /** @type {HTMLInputElement} */ (e.currentTarget);
        void send(Array.from(input.files ?? []));
        input.value = '';
      }} />
    <label for="link-upload-input" class="button primary">Choose files</label>
    <${Alert} message=${error} />
    ${busy.length > 0 && html`<p role="status">Sending ${busy.join(', ')}…</p>`}
    ${sent.length > 0 &&
    html`<h2>Sent in this visit</h2>
      <ul>${sent.map((s, i) => html`<li key=${i}>${s.name} (${formatBytes(s.size)})</li>`)}</ul>`}
  </div>`;
}
