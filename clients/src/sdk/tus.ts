import { createReadStream, type ReadStream } from 'node:fs';
import type * as tus from 'tus-js-client';
import type * as P from '../../../shared/protocol';
import { AbortedError, ApiError, NetworkError } from './errors';

export interface ResumableUploadOptions {
  server: string;
  token: string;
  /** The file on disk to send. */
  path: string;
  size: number;
  /** `Upload-Metadata`: `name` and `folderId` and `id` for a new file, or `fileId` to replace a content. */
  metadata: { name?: string; folderId?: string; id?: string; fileId?: string; sha256?: string };
  ifMatch?: string;
  /** The address of an upload started earlier: it is continued from the offset the service holds. */
  uploadUrl?: string;
  /** Called once the upload's address is known, so that a crash can resume it. */
  onUploadUrl?: (url: string) => void;
  onProgress?: (sent: number, total: number) => void;
  /** Bytes per PATCH; by default the whole rest of the file in one (it is streamed from disk, and a
   * PATCH cut short still leaves its bytes on the service, so a resume starts where it stopped). */
  chunkSize?: number;
  /**
   * Awaited before the PATCH that completes the upload, which then carries the last TAIL_BYTES
   * alone: the rest streams meanwhile. Throwing ends the upload on the service (its bytes go) and
   * the upload fails with what was thrown. A caller checks there that the file stayed as it was.
   */
  beforeCommit?: () => Promise<void>;
  signal?: AbortSignal;
}

/** What the completing PATCH carries when `beforeCommit` holds it back. */
const TAIL_BYTES = 1024 * 1024;

function toError(err: Error & { originalResponse?: tus.HttpResponse | null }): Error {
  const res = err.originalResponse;
  if (!res) return new NetworkError(err.message, err);
  let body: { error?: P.ErrorBody } | undefined;
  try {
    body = JSON.parse(res.getBody()) as typeof body;
  } catch {
    body = undefined;
  }
  const retry = Number(res.getHeader('Retry-After'));
  return new ApiError(res.getStatus(), body?.error, Number.isFinite(retry) ? retry : undefined);
}

const READ_BYTES = 1024 * 1024;

type FileSource = Awaited<ReturnType<tus.FileReader['openFile']>>;

/**
 * tus-js-client's source for a file on disk, read in READ_BYTES pieces (its own reads 64 KiB).
 * `close` destroys the streams of pieces not read to their end (a PATCH cut short, a piece held
 * back by `beforeCommit`), which would otherwise keep their descriptors open.
 */
function fileSource(path: string, size: number): FileSource {
  const open = new Set<ReadStream>();
  return {
    size,
    slice: (start: number, end: number) => {
      if (end <= start) return Promise.resolve({ value: Buffer.alloc(0), done: end >= size });
      const stream = createReadStream(path, { start, end: end - 1, highWaterMark: READ_BYTES });
      open.add(stream);
      stream.once('close', () => open.delete(stream));
      return Promise.resolve({ value: Object.assign(stream, { size: end - start }), done: end >= size });
    },
    close: () => {
      for (const stream of open) stream.destroy();
    },
  };
}

/** Runs one tus upload to its end and answers the File the completing PATCH returned. */
export async function resumableUpload(o: ResumableUploadOptions): Promise<P.File> {
  // Loaded on first use: most runs of the command never send a large file.
  const { Upload } = await import('tus-js-client');
  return new Promise<P.File>((resolve, reject) => {
    if (o.signal?.aborted) return reject(new AbortedError());
    const metadata: Record<string, string> = {};
    for (const [k, v] of Object.entries(o.metadata)) if (v !== undefined && v !== '') metadata[k] = v;
    const headers: Record<string, string> = { authorization: `Bearer ${o.token}` };
    if (o.ifMatch) headers['if-match'] = `"${o.ifMatch}"`;
    const { beforeCommit } = o;
    const chunkSize = beforeCommit && o.size > TAIL_BYTES ? o.size - TAIL_BYTES : (o.chunkSize ?? Number.POSITIVE_INFINITY);
    let committing = false;
    // The file is read by `source`; tus-js-client's input goes unused.
    const source = fileSource(o.path, o.size);
    const ended = () => {
      o.signal?.removeEventListener('abort', onAbort);
      source.close();
    };
    const upload = new Upload(Buffer.alloc(0), {
      endpoint: `${o.server}/v1/uploads`,
      uploadUrl: o.uploadUrl ?? null,
      uploadSize: o.size,
      chunkSize,
      fileReader: { openFile: () => Promise.resolve(source) },
      onBeforeRequest: async (req) => {
        if (!beforeCommit || committing || req.getMethod() !== 'PATCH') return;
        if (Number(req.getHeader('Upload-Offset')) + chunkSize < o.size) return;
        committing = true;
        try {
          await beforeCommit();
        } catch (err) {
          ended();
          // Aborted before the error reaches tus-js-client, which would retry it otherwise.
          void upload.abort(true).catch(() => undefined);
          reject(err);
          throw err;
        }
      },
      metadata,
      headers,
      retryDelays: [0, 1000, 3000, 5000],
      storeFingerprintForResuming: false,
      removeFingerprintOnSuccess: true,
      onUploadUrlAvailable: () => {
        if (upload.url) o.onUploadUrl?.(upload.url);
      },
      onProgress: (sent, total) => o.onProgress?.(sent, total),
      onError: (err) => {
        ended();
        reject(o.signal?.aborted ? new AbortedError() : toError(err as Error & { originalResponse?: tus.HttpResponse | null }));
      },
      onSuccess: (payload) => {
        ended();
        try {
          resolve(JSON.parse(payload.lastResponse.getBody()) as P.File);
        } catch {
          reject(new ApiError(502, { code: 'INTERNAL', message: 'the completing PATCH carried no file' }));
        }
      },
    });
    const onAbort = () => {
      ended();
      void upload.abort(false);
      reject(new AbortedError());
    };
    o.signal?.addEventListener('abort', onAbort, { once: true });
    upload.start();
  });
}
