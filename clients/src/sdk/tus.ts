import { createReadStream } from 'node:fs';
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
  signal?: AbortSignal;
}

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
    const upload = new Upload(createReadStream(o.path), {
      endpoint: `${o.server}/v1/uploads`,
      uploadUrl: o.uploadUrl ?? null,
      uploadSize: o.size,
      chunkSize: o.chunkSize ?? Number.POSITIVE_INFINITY,
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
        o.signal?.removeEventListener('abort', onAbort);
        reject(o.signal?.aborted ? new AbortedError() : toError(err as Error & { originalResponse?: tus.HttpResponse | null }));
      },
      onSuccess: (payload) => {
        o.signal?.removeEventListener('abort', onAbort);
        try {
          resolve(JSON.parse(payload.lastResponse.getBody()) as P.File);
        } catch {
          reject(new ApiError(502, { code: 'INTERNAL', message: 'the completing PATCH carried no file' }));
        }
      },
    });
    const onAbort = () => {
      void upload.abort(false);
      reject(new AbortedError());
    };
    o.signal?.addEventListener('abort', onAbort, { once: true });
    upload.start();
  });
}
