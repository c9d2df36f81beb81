import type { Express, Request, Response } from 'express';
import { notFound } from '../../../shared/errors';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { singleParam } from '../http/request';
import type { ContentStore } from '../../../shared/storage/content.store';
import { contentEtag, notModified, redirectToStore, sendContent, setContentHeaders } from './content.download';
import type { FilesService } from '../files/files.service';

/** Where downloads are served: the API's `/files/:id/content` under `/v1`. */
export const DOWNLOAD_PATH = '/v1/files/:id/content';

/**
 * `GET /v1/files/:id/content` (and HEAD): a file's bytes, whole or one range. Registered on the app
 * itself, right after the request log and metrics, rather than in the `/v1` router: a download's one
 * lookup and one open are most of its work, and every router a request passes through costs it CPU
 * (the transfer bench's range reads against their floor).
 */
export function mountDownloads(app: Express, files: FilesService, store: ContentStore, authenticated: ReturnType<typeof requireUser>): void {
  app.get(DOWNLOAD_PATH, authenticated, (req, res) => download(files, store, req, res));
}

async function download(files: FilesService, store: ContentStore, req: Request, res: Response): Promise<void> {
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
    if (await redirectToStore(req, res, store, opened.file.storageKey!, opened.content)) return;
    await sendContent(req, res, opened.file, opened.content);
  } catch (err) {
    // The error goes out as JSON, not as the file's type or as an attachment.
    if (!res.headersSent) for (const header of ['Content-Type', 'Content-Disposition', 'ETag', 'Repr-Digest']) res.removeHeader(header);
    throw err;
  }
}
