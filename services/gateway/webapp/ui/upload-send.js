// How an upload's bytes travel: many small files together in one framed `POST /v1/files/bulk`, a
// file up to 8 MiB in one multipart `POST /v1/files` (XHR, for its progress events), a larger one
// through the resumable (tus) endpoint, which picks up after a network cut by itself and, after a
// reload, resumes when the same file is chosen again (tus-js-client's fingerprint store).
import { ApiError, humanMessage } from './api.js';

/** @typedef {import('./uploads.js').Upload} Upload */

const CUT = 'The upload was cut off: the service cannot be reached.';

/** @param {XMLHttpRequest} xhr */
const failure = (xhr) =>
  xhr.status === 0 ? new ApiError(CUT, 'NETWORK', 0) : new ApiError(humanMessage(xhr.status, xhr.response), xhr.response?.error?.code ?? 'HTTP', xhr.status);

/** @param {Upload} upload */
export function sendSmall(upload) {
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
    xhr.onload = () => (xhr.status < 300 ? resolve(xhr.response) : reject(failure(xhr)));
    xhr.onerror = () => reject(new ApiError(CUT, 'NETWORK', 0));
    xhr.onabort = () => resolve(undefined);
    xhr.send(form);
  });
}

/** One file's frame header: a 4-byte big-endian length, then that many bytes of JSON. @param {unknown} header */
function frame(header) {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const length = new Uint8Array(4);
  new DataView(length.buffer).setUint32(0, json.length);
  return [length, json];
}

/**
 * Sends `batch` in one `POST /v1/files/bulk` (`application/vnd.filesync.bulk`: each file a header
 * frame and its bytes, then a zero length). Answers one result per file, in order: `{ status, file }`
 * or `{ status, error }`, each as that file alone would have had it. Progress follows the bytes sent.
 * @param {Upload[]} batch
 * @returns {Promise<Array<{ status: number, file?: { id: string }, error?: { code: string, message: string } }>>}
 */
export function sendBulk(batch) {
  /** @type {BlobPart[]} */
  const parts = [];
  const ends = [];
  let offset = 0;
  for (const upload of batch) {
    const header = { name: upload.file.name, size: upload.file.size, ...(upload.folderId ? { folderId: upload.folderId } : {}) };
    const head = frame(header);
    parts.push(...head, upload.file);
    offset += head[0].length + head[1].length + upload.file.size;
    ends.push(offset);
    upload.state.value = 'sending';
  }
  parts.push(new Uint8Array(4));
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/v1/files/bulk');
    xhr.setRequestHeader('content-type', 'application/vnd.filesync.bulk');
    xhr.responseType = 'json';
    // Files wholly sent are filled once; only the one being sent moves, so a progress event costs a file or two, not the batch.
    let current = 0;
    xhr.upload.onprogress = (e) => {
      while (current < batch.length && e.loaded >= ends[current]) batch[current++].progress.value = 1;
      const upload = batch[current];
      if (!upload) return;
      const start = current === 0 ? 0 : ends[current - 1];
      upload.progress.value = Math.max(0, (e.loaded - start) / Math.max(1, ends[current] - start));
    };
    xhr.onload = () => {
      const results = xhr.response?.results ?? xhr.response?.error?.details?.results;
      if (xhr.status < 300 && Array.isArray(results) && results.length === batch.length) resolve(results);
      else reject(Object.assign(failure(xhr), { results: Array.isArray(results) ? results : [] }));
    };
    xhr.onerror = () => reject(Object.assign(new ApiError(CUT, 'NETWORK', 0), { results: [] }));
    xhr.send(new Blob(parts));
  });
}

/** @param {Upload} upload */
export async function sendResumable(upload) {
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
        reject(new ApiError(status ? humanMessage(status, body) : CUT, body?.error?.code ?? 'HTTP', status));
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
