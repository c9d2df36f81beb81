import type { RequestHandler } from 'express';
import type { UploadsStreaming } from '../../../shared/chunks/uploads.quiet';

/** Bodies from this size on (or of no declared size) hold the workers' chunk lists back while they stream. */
const MARKED_FROM_BYTES = 1024 * 1024;

/**
 * Marks every large request body, on every route (multipart, `PUT` content, tus, WebDAV, deltas,
 * link uploads), from its first byte until its response closes, so the workers make chunk lists
 * when the uploads leave the machine quiet (shared/chunks/uploads.quiet.ts).
 */
export function markUploadsStreaming(streaming: UploadsStreaming): RequestHandler {
  return (req, res, next) => {
    const length = req.headers['content-length'];
    const large = length === undefined ? req.headers['transfer-encoding'] !== undefined : Number(length) >= MARKED_FROM_BYTES;
    if (large) res.once('close', streaming.begin());
    next();
  };
}
