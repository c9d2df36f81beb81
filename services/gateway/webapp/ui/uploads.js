// Uploads: what is queued, how many go at once, and the panel that shows them. Small files travel
// together, a few hundred a request; others one a request, files over 8 MiB resumable (upload-send.js).
// Dropped folders are made first, in batches of sync ops, then their files are sent.
import { batch as inOneRender, signal } from '@preact/signals';
import { api, ApiError, humanMessage, syncOps } from './api.js';
import { planDrop } from './drop-tree.js';
import { html } from './html.js';
import { sendBulk, sendResumable, sendSmall } from './upload-send.js';

const RESUMABLE_OVER = 8 * 1024 * 1024;
/** Single uploads at once; with the batches and the change feed's long poll, within a browser's six connections per host. */
const PARALLEL = 3;
/** Files up to this size travel together: per file, the request would cost more than the bytes. */
const TOGETHER_UP_TO = 256 * 1024;
/** A batch: at most this many files and bytes (the service takes up to 1000 files); this many batches at once. */
const BATCH_FILES = 200;
const BATCH_BYTES = 4 * 1024 * 1024;
const BATCHES = 2;
/** Rows of the upload panel drawn at once; the rest are counted. */
const SHOWN = 50;

/**
 * @typedef {{ key: number, name: string, file: File, folderId: string, progress: import('@preact/signals').Signal<number>,
 *   state: import('@preact/signals').Signal<'queued' | 'sending' | 'done' | 'failed' | 'cancelled'>, error: import('@preact/signals').Signal<string>,
 *   cancel: () => void }} Upload
 */

/** @type {import('@preact/signals').Signal<Upload[]>} */
export const uploads = signal([]);
/** Bumped when uploads finish (once per batch), so the listing shows the new files soon. */
export const uploaded = signal(0);

let counter = 0;
/** Files sent one a request, and small files waiting to go together. @type {Upload[]} */
const queue = [];
/** @type {Upload[]} */
const small = [];
let active = 0;
let batches = 0;

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
  if (queued) (file.size <= TOGETHER_UP_TO ? small : queue).push(upload);
  return upload;
}

/** @param {Upload} upload */
function succeed(upload) {
  upload.state.value = 'done';
  upload.progress.value = 1;
}

/** @param {Upload} upload @param {unknown} err */
function fail(upload, err) {
  upload.state.value = 'failed';
  upload.error.value =
    err instanceof ApiError && err.code === 'NAME_CONFLICT'
      ? 'Not uploaded: this folder already has a file or folder of that name. Rename one of them, then upload it again.'
      : err instanceof Error
        ? err.message
        : String(err);
}

/** The next batch of small files, in the order they were queued. */
function takeBatch() {
  /** @type {Upload[]} */
  const taken = [];
  let bytes = 0;
  while (small.length > 0 && taken.length < BATCH_FILES) {
    const next = /** @type {Upload} */ (small[0]);
    if (next.state.value === 'cancelled') {
      small.shift();
      continue;
    }
    if (taken.length > 0 && bytes + next.file.size > BATCH_BYTES) break;
    taken.push(/** @type {Upload} */ (small.shift()));
    bytes += next.file.size;
  }
  return taken;
}

function pump() {
  if (batches < BATCHES && small.length > 0) {
    const taken = takeBatch();
    // A lone small file goes on its own, with its own progress.
    if (taken.length === 1) queue.unshift(.../** @type {Upload[]} */ (taken));
    else if (taken.length > 1) {
      sendBatch(taken);
      // One batch's body per task: building it is the most the page does for an upload (tens of ms for 200 files).
      if (batches < BATCHES && small.length > 0) setTimeout(pump, 0);
    }
  }
  while (active < PARALLEL && queue.length > 0) {
    const upload = /** @type {Upload} */ (queue.shift());
    if (upload.state.value === 'cancelled') continue;
    active += 1;
    const send = upload.file.size > RESUMABLE_OVER ? sendResumable : sendSmall;
    send(upload)
      .then(
        () => {
          if (upload.state.value === 'cancelled') return;
          succeed(upload);
          uploaded.value += 1;
        },
        (err) => upload.state.value !== 'cancelled' && fail(upload, err),
      )
      .finally(() => {
        active -= 1;
        pump();
      });
  }
}

/**
 * Sends small files in one request and settles each by its own result. A file cancelled while its
 * batch was on its way and created anyway is deleted again. When the service does not answer the batch
 * as a whole (busy, cut off), the files it did not settle go one by one.
 * @param {Upload[]} batch
 */
function sendBatch(batch) {
  batches += 1;
  /** @param {Upload[]} settled @param {any[]} results */
  const settle = (settled, results) =>
    inOneRender(() => {
      settled.forEach((upload, i) => {
        const result = results[i];
        const created = result.status < 300;
        if (upload.state.value === 'cancelled') {
          if (created) void api.del(`/v1/files/${result.file.id}`).catch(() => undefined);
        } else if (created) succeed(upload);
        else fail(upload, new ApiError(humanText(result), result.error?.code ?? 'HTTP', result.status));
      });
      if (settled.length > 0) uploaded.value += 1;
    });
  sendBulk(batch)
    .then(
      (results) => settle(batch, results),
      (/** @type {any} */ err) => {
        const results = err.results ?? [];
        settle(batch.slice(0, results.length), results);
        const rest = batch.slice(results.length).filter((u) => u.state.value !== 'cancelled');
        if (err.status === 401) inOneRender(() => rest.forEach((u) => fail(u, err)));
        else {
          inOneRender(() => rest.forEach((u) => ((u.state.value = 'queued'), (u.progress.value = 0))));
          queue.unshift(...rest);
        }
      },
    )
    .finally(() => {
      batches -= 1;
      pump();
    });
}

/** @param {{ status: number, error?: { code: string, message: string } }} result */
const humanText = (result) => humanMessage(result.status, { error: result.error });

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
  // Each bar is given its progress signal itself, not its value: a bar moves without drawing the panel again.
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
          <progress max="1" value=${u.progress} aria-label=${`${u.name} upload progress`}></progress>
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
