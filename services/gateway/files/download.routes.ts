import { Router } from 'express';
import { notFound } from '../../../shared/errors';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { singleParam } from '../http/request';
import { contentEtag, notModified, sendContent, setContentHeaders } from './content.download';
import type { FilesService } from './files.service';

/**
 * `GET /files/:id/content` (and HEAD): a file's bytes, whole or one range. A router of its own so it
 * can be mounted ahead of the others: a download's one lookup and one open are most of its work,
 * and every router a request passes through costs it CPU (the transfer bench's range reads).
 */
export function downloadRoutes(files: FilesService, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.get('/files/:id/content', authenticated, async (req, res) => {
    const userId = principalOf(req).userId;
    const file = await files.get(userId, singleParam(req, 'id'));
    if (!file.storageKey) throw notFound('this file has no content');
    setContentHeaders(res, file);
    // Answered here rather than by the conditional logic of a static server, which ignores
    // If-None-Match when the request says Cache-Control: no-cache, as fetch() does whenever a
    // conditional header is set.
    if (notModified(req, contentEtag(file))) {
      res.status(304).end();
      return;
    }
    try {
      const opened = await files.openContent(userId, file);
      // The content opened may be a newer version than the row read above (see openContent).
      setContentHeaders(res, opened.file);
      res.attachment(opened.file.name);
      res.type(opened.file.mimeType || 'application/octet-stream');
      await sendContent(req, res, opened.file, opened.content);
    } catch (err) {
      // The error goes out as JSON, not as the file's type or as an attachment.
      if (!res.headersSent) for (const header of ['Content-Type', 'Content-Disposition', 'ETag', 'Repr-Digest']) res.removeHeader(header);
      throw err;
    }
  });

  return router;
}
