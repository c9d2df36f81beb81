import type { Readable } from 'node:stream';
import type { Request, Response } from 'express';
import { AppError } from '../../../shared/errors';
import type { ByteRange, ContentHandle, ContentStore } from '../../../shared/storage/content.store';
import { reprDigest } from './digest';
import { sendCoalesced } from '../http/coalesced.pipe';
import type { ResourceRecord } from '../files/files.service';

/** The ETag of a file's content: its SHA-256, quoted. */
export const contentEtag = (file: ResourceRecord): string | undefined => (file.contentSha256 ? `"${file.contentSha256}"` : undefined);

/** Entity-tag lists as in If-Match and If-None-Match, compared weakly as RFC 9110 prescribes for If-None-Match. */
function listHas(header: string, etag: string): boolean {
  return header.split(',').some((raw) => {
    const tag = raw.trim();
    return tag === '*' || tag === etag || tag === `W/${etag}` || `W/${tag}` === etag;
  });
}

/** If-None-Match against the content's ETag: the client holds these bytes already. */
export function notModified(req: Request, etag: string | undefined): boolean {
  const header = req.headers['if-none-match'];
  return Boolean(etag && header && listHas(header, etag));
}

/** If-Match on a read: the client wants these bytes only if they are still the version it names. */
export function preconditionFails(req: Request, etag: string | undefined): boolean {
  const header = req.headers['if-match'];
  if (!header) return false;
  return !etag || !listHas(header, etag);
}

/**
 * The part of the content a Range asks for: undefined for the whole (no Range, a malformed one, a unit
 * other than bytes, several ranges, or an If-Range naming another version), the one range otherwise;
 * 'unsatisfiable' when it starts past the end.
 */
function requestedRange(req: Request, size: number, etag: string | undefined): ByteRange | 'unsatisfiable' | undefined {
  if (!/^ *bytes=/.test(req.headers.range ?? '')) return undefined;
  const ifRange = req.headers['if-range'];
  // An If-Range date cannot match: the content has no Last-Modified. An entity tag must be this one.
  if (ifRange !== undefined && !(ifRange.includes('"') && etag !== undefined && ifRange.includes(etag))) return undefined;
  const ranges = req.range(size, { combine: true });
  if (ranges === -1) return 'unsatisfiable';
  if (ranges === undefined || ranges === -2 || ranges.type !== 'bytes' || ranges.length !== 1) return undefined;
  return { start: ranges[0]!.start, end: ranges[0]!.end };
}

/**
 * Answers a whole-content GET with 302 to the store's own URL for `key` when the store hands
 * downloads to clients (S3_DOWNLOADS=redirect), and says whether it did (`content`, the handle open
 * on `key`, is then closed). The gateway sends the bytes
 * itself for a HEAD, a Range (206 and Content-Range are its own), an If-Match (412 is), and on a
 * store that serves through the gateway. Call it once `key` is open (it exists) and the content's
 * headers are set: the URL makes the store send the same Content-Disposition and Content-Type. The
 * 302 keeps ETag and Repr-Digest, which name the bytes behind the Location. Responses that must
 * carry the gateway's own headers (WebDAV, share links) do not call it: they are always proxied.
 */
export async function redirectToStore(req: Request, res: Response, store: ContentStore, key: string, content: ContentHandle): Promise<boolean> {
  if (req.method !== 'GET' || !store.downloadUrl || req.headers.range !== undefined || req.headers['if-match'] !== undefined) return false;
  const headers = { contentDisposition: String(res.getHeader('Content-Disposition')), contentType: String(res.getHeader('Content-Type')) };
  let url: string | undefined;
  try {
    url = await store.downloadUrl(key, headers);
  } catch (err) {
    await content.close();
    throw err;
  }
  if (!url) return false;
  await content.close();
  res.removeHeader('Content-Disposition');
  res.removeHeader('Content-Type');
  // The URL expires within minutes: no cache keeps the redirect.
  res.setHeader('Cache-Control', 'no-store');
  res.status(302).setHeader('Location', url);
  res.end();
  return true;
}

/**
 * Sends open content: 200 with every byte, or 206 with the one range asked for, or 412/416. The
 * handle is read or closed whatever the outcome; the bytes are those the handle was opened on, even
 * if the file's content is replaced meanwhile. The caller has set the content's own headers.
 */
export async function sendContent(req: Request, res: Response, file: ResourceRecord, content: ContentHandle): Promise<void> {
  const etag = contentEtag(file);
  let range: ByteRange | 'unsatisfiable' | undefined;
  try {
    if (preconditionFails(req, etag)) throw new AppError('PRECONDITION_FAILED', 'the content is not the version If-Match names');
    range = requestedRange(req, content.size, etag);
    if (range === 'unsatisfiable') {
      res.setHeader('Content-Range', `bytes */${content.size}`);
      throw new AppError('INVALID_REQUEST', 'the requested range is not satisfiable', { status: 416 });
    }
  } catch (err) {
    await content.close();
    throw err;
  }
  res.setHeader('Accept-Ranges', 'bytes');
  if (range) {
    res.status(206);
    res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${content.size}`);
  }
  res.setHeader('Content-Length', String(range ? range.end - range.start + 1 : content.size));
  if (req.method === 'HEAD') {
    await content.close();
    res.end();
    return;
  }
  // A read that fails after the headers left cuts the response (the client sees a short body).
  if (content.writeTo) {
    try {
      await content.writeTo(res, range);
      if (!res.destroyed) res.end();
    } catch {
      res.destroy();
    }
    return;
  }
  // Settles when the response closes, sent or cut: a client that goes away stops the read.
  let stream: Readable;
  try {
    stream = await content.read(range);
  } catch {
    res.destroy();
    return;
  }
  // The client may have gone while the store was answering.
  if (res.destroyed) {
    stream.destroy();
    return;
  }
  await sendCoalesced(stream, res);
}

/** The headers every content response carries, 304 included. */
export function setContentHeaders(res: Response, file: ResourceRecord): void {
  const etag = contentEtag(file);
  if (etag) res.setHeader('ETag', etag);
  // Of the whole content, on 206 as on 200 (RFC 9530: the digest of the representation).
  if (file.contentSha256) res.setHeader('Repr-Digest', reprDigest(file.contentSha256));
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cache-Control', 'private, no-cache');
}
