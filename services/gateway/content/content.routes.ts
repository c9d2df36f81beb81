import { Router, type Request } from 'express';
import { tooLarge } from '../../../shared/errors';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { singleParam } from '../http/request';
import { toFileView } from '../files/files.presenter';
import type { UploadStaging } from '../uploads/upload.staging';
import type { ContentService } from './content.service';
import { declaredBodyDigest } from './digest';

/** How long the rest of a refused body is read and dropped before the connection is cut. */
const LINGER_MS = 5000;

/**
 * After an early answer (404, 412, 413) the client may still be sending. Closing at once would reset
 * the connection, and a client that is still writing could lose the answer with it; so the rest is
 * read and dropped for a little while (what servers call a lingering close), then the socket is cut.
 */
export function discardRest(req: Request): void {
  req.unpipe();
  req.resume();
  const timer = setTimeout(() => req.socket.destroy(), LINGER_MS);
  timer.unref();
  const done = () => clearTimeout(timer);
  req.once('end', done).once('close', done);
}

function header(req: Request, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * `PUT /files/:id/content`: the raw body is the new content. Mounted ahead of the JSON body parser,
 * which would otherwise take a body sent as application/json for itself.
 */
export function contentRoutes(
  content: ContentService,
  storage: UploadStaging,
  maxUploadBytes: number,
  authenticated: ReturnType<typeof requireUser>,
): Router {
  const router = Router();

  router.put('/files/:id/content', authenticated, async (req, res) => {
    const { userId, deviceId } = principalOf(req);
    const fileId = singleParam(req, 'id');
    try {
      const expectedSha256 = declaredBodyDigest(req.headers);
      const conditions = { ifMatch: header(req, 'if-match'), ifNoneMatch: header(req, 'if-none-match') };
      // Refused before a byte is read: the absent file, the failed precondition, the declared size.
      const file = await content.checkBeforeUpload(userId, fileId, conditions);
      const length = req.headers['content-length'];
      if (length !== undefined && Number(length) > maxUploadBytes) {
        throw tooLarge(maxUploadBytes);
      }
      if (length !== undefined && Number.isSafeInteger(Number(length))) await content.checkDeclaredSize(file, Number(length));
      const staged = await storage.stage(req, maxUploadBytes);
      const record = await content.replaceContent({
        userId,
        deviceId,
        fileId,
        staged,
        declaredType: req.headers['content-type'],
        expectedSha256,
        ...conditions,
      });
      res.json(toFileView(record));
    } catch (err) {
      if (!req.complete) discardRest(req);
      throw err;
    }
  });

  return router;
}
