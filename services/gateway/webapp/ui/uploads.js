// Uploads: small files in one multipart request each, files over 8 MiB through the resumable (tus)
// endpoint, which picks up after a network cut by itself and, after a reload, resumes when the same
// file is chosen again (tus-js-client's fingerprint store in localStorage). Dropped folders are made
// first, in batches of sync ops, then their files are sent a few at a time.
import { signal } from '@preact/signals';
import { ApiError, humanMessage, syncOps } from './api.js';
import { planDrop } from './drop-tree.js';
import { html } from './html.js';

const RESUMABLE_OVER = 8 * 1024 * 1024;
const PARALLEL = 4;
/** Rows of the upload panel drawn at once; the rest are counted. */
const SHOWN = 50;

/**
 * @typedef {{ key: number, name: string, file: File, folderId: string, progress: import('@preact/signals').Signal<number>,
 *   state: import('@preact/signals').Signal<'queued' | 'sending' | 'done' | 'failed' | 'cancelled'>, error: import('@preact/signals').Signal<string>,
 *   cancel: () => void }} Upload
 */

/** @type {import('@preact/signals').Signal<Upload[]>} */
export const uploads = signal([]);
/** Bumped when an upload finishes, so the listing shows the new file at once. */
export const uploaded = signal(0);

let counter = 0;
/** @type {Upload[]} */
const queue = [];
let active = 0;

/** @param {File} file @param {string} folderId @param {boolean} [queued] false: shown only, never sent */
function enqueue(file, folderId, queued = true) {
  /** @type {Upload} */
  const upload = {
    key: ++counter,
    name: file.name,
    file,
    folderId,
    progress: signal(0),
    state: signal('queued'),
    error: signal(''),
    cancel: () => {
      upload.state.value = 'cancelled';
    },
  };
  if (queued) queue.push(upload);
  return upload;
}

function pump() {
  while (active < PARALLEL && queue.length > 0) {
    const upload = /** @type {Upload} */ (queue.shift());
    if (upload.state.value === 'cancelled') continue;
    active += 1;
    const send = upload.file.size > RESUMABLE_OVER ? sendResumable : sendSmall;
    send(upload)
      .then(
        () => {
          if (upload.state.value !== 'cancelled') {
            upload.state.value = 'done';
            upload.progress.value = 1;
            uploaded.value += 1;
          }
        },
        (err) => {
          if (upload.state.value === 'cancelled') return;
          upload.state.value = 'failed';
          upload.error.value =
            err instanceof ApiError && err.code === 'NAME_CONFLICT'
              ? 'Not uploaded: this folder already has a file or folder of that name. Rename one of them, then upload it again.'
              : err instanceof Error
                ? err.message
                : String(err);
        },
      )
      .finally(() => {
        active -= 1;
        pump();
      });
  }
}

/** @param {Upload} upload */
function sendSmall(upload) {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    if (upload.folderId) form.append('folderId', upload.folderId);
    form.append('file', upload.file, upload.file.name);
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/v1/files');
    xhr.responseType = 'json';
    upload.state.value = 'sending';
    upload.cancel = () => {
      upload.state.value = 'cancelled';
      xhr.abort();
    };
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) upload.progress.value = e.loaded / e.total;
    };
    xhr.onload = () => (xhr.status < 300 ? resolve(xhr.response) : reject(new ApiError(humanMessage(xhr.status, xhr.response), xhr.response?.error?.code ?? 'HTTP', xhr.status)));
    xhr.onerror = () => reject(new ApiError('The upload was cut off: the service cannot be reached.', 'NETWORK', 0));
    xhr.onabort = () => resolve(undefined);
    xhr.send(form);
  });
}

/** @param {Upload} upload */
async function sendResumable(upload) {
  const { Upload: TusUpload } = await import('tus-js-client');
  upload.state.value = 'sending';
  return new Promise((resolve, reject) => {
    /** @type {Record<string, string>} */
    const metadata = { name: upload.file.name };
    if (upload.folderId) metadata.folderId = upload.folderId;
    const tus = new TusUpload(upload.file, {
      endpoint: '/v1/uploads',
      metadata,
      chunkSize: 64 * 1024 * 1024,
      retryDelays: [0, 1000, 3000, 5000, 10000, 20000],
      storeFingerprintForResuming: true,
      fingerprint: (file) => fingerprint(/** @type {File} */ (file), upload.folderId),
      removeFingerprintOnSuccess: true,
      onProgress: (sent, total) => {
        upload.progress.value = total ? sent / total : 0;
      },
      onSuccess: () => resolve(undefined),
      onError: (err) => {
        if (upload.state.value === 'cancelled') return resolve(undefined);
        // Offline for longer than the retries last: go on by itself when the network comes back.
        if (!navigator.onLine) {
          addEventListener('online', () => tus.start(), { once: true });
          return;
        }
        const status = /** @type {any} */ (err).originalResponse?.getStatus?.() ?? 0;
        let body = null;
        try {
          body = JSON.parse(/** @type {any} */ (err).originalResponse?.getBody?.() ?? 'null');
        } catch {
          body = null;
        }
        reject(new ApiError(status ? humanMessage(status, body) : 'The upload was cut off: the service cannot be reached.', body?.error?.code ?? 'HTTP', status));
      },
    });
    upload.cancel = () => {
      upload.state.value = 'cancelled';
      void tus.abort(true).catch(() => undefined);
      resolve(undefined);
    };
    tus.findPreviousUploads().then((previous) => {
      if (previous.length > 0) tus.resumeFromPreviousUpload(previous[0]);
      tus.start();
    }, () => tus.start());
  });
}

const SAMPLE = 1024 * 1024;

/**
 * What identifies an unfinished upload to resume: the folder, the file's name, type and size, and a
 * digest of its first and last MiB, so the same file chosen again after a reload resumes even when the
 * browser reports another modification time, and another file of the same name and size does not.
 * Without WebCrypto (a page not served over https or from localhost) the modification time stands in.
 * @param {File} file @param {string} folderId
 */
async function fingerprint(file, folderId) {
  const base = ['filesync-tus', folderId, file.name, file.type, file.size].join('/');
  if (!crypto.subtle) return `${base}/${file.lastModified}`;
  const head = file.slice(0, SAMPLE);
  const tail = file.size > SAMPLE ? file.slice(Math.max(SAMPLE, file.size - SAMPLE)) : new Blob();
  const digest = await crypto.subtle.digest('SHA-256', await new Blob([head, tail]).arrayBuffer());
  return `${base}/${Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** Uploads files into a folder. @param {File[]} files @param {string} folderId */
export function uploadFiles(files, folderId) {
  show(files.map((f) => enqueue(f, folderId)));
}

/** Adds uploads to the panel (finished ones leave it) and starts sending. @param {Upload[]} added */
function show(added) {
  uploads.value = [...uploads.value.filter((u) => u.state.value === 'sending' || u.state.value === 'queued' || u.state.value === 'failed'), ...added];
  pump();
}

/**
 * Dropped files and folders: the folders are created first (new ids, parents before children, up to
 * 1000 per request), reusing existing folders of the same names at any depth; then the files. Files
 * whose names are taken where they land are listed as not uploaded, each with the reason.
 * @param {Array<{ file: File, dirs: string[] }>} entries @param {string} folderId
 */
export async function uploadTree(entries, folderId) {
  const plan = await planDrop(entries, folderId);
  await syncOps(plan.ops);
  const refused = plan.refused.map(({ file, reason }) => {
    const upload = enqueue(file, folderId, false);
    upload.state.value = 'failed';
    upload.error.value = reason;
    return upload;
  });
  show([...refused, ...plan.files.map(({ file, folderId: into }) => enqueue(file, into))]);
}

/** Reads what was dropped, folders included (webkitGetAsEntry works in Chromium, Firefox and Safari). @param {DataTransfer} data */
export async function droppedEntries(data) {
  /** @type {Array<{ file: File, dirs: string[] }>} */
  const out = [];
  /** @param {any} entry @param {string[]} dirs */
  const walk = async (entry, dirs) => {
    if (entry.isFile) {
      const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
      out.push({ file, dirs });
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      const inside = [...dirs, entry.name];
      for (;;) {
        const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
        if (batch.length === 0) break;
        for (const child of batch) await walk(child, inside);
      }
    }
  };
  const entries = Array.from(data.items ?? [])
    .map((item) => item.webkitGetAsEntry?.())
    .filter(Boolean);
  if (entries.length === 0) return Array.from(data.files).map((file) => ({ file, dirs: [] }));
  for (const entry of entries) await walk(entry, []);
  return out;
}

export function UploadPanel() {
  const all = uploads.value;
  if (all.length === 0) return null;
  const done = all.filter((u) => u.state.value === 'done').length;
  // Unfinished and failed ones first, then the latest finished: what is going on, then what was sent.
  const open = all.filter((u) => u.state.value !== 'done' && u.state.value !== 'cancelled');
  const shown = [...open.slice(0, SHOWN), ...all.filter((u) => u.state.value === 'done').slice(-Math.max(0, SHOWN - open.length))];
  return html`<section class="uploads" aria-label="Uploads">
    <div class="uploads-head">
      <h2>Uploads</h2>
      <span>${done} of ${all.length} done</span>
      <button type="button" onClick=${() => (uploads.value = all.filter((u) => u.state.value === 'sending' || u.state.value === 'queued'))}>Clear finished</button>
      ${open.length === 0 && html`<button type="button" onClick=${() => (uploads.value = [])}>Close uploads</button>`}
    </div>
    <ul>
      ${shown.map(
        (u) => html`<li key=${u.key}>
          <span class="upload-name">${u.name}</span>
          <progress max="1" value=${u.progress.value} aria-label=${`${u.name} upload progress`}></progress>
          ${u.state.value === 'failed'
            ? html`<span role="alert" class="alert inline">${u.name}: ${u.error.value}</span>`
            : u.state.value === 'done'
              ? html`<span class="done">Done</span>`
              : html`<button type="button" aria-label=${`Cancel upload of ${u.name}`} onClick=${() => u.cancel()}>Cancel</button>`}
        </li>`,
      )}
    </ul>
  </section>`;
}
