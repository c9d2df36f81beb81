import { Router } from 'express';
import { invalid } from '../../../shared/errors';
import { DEFAULT_THUMBNAIL_SIZE, MAX_THUMBNAIL_SIZE, MIN_THUMBNAIL_SIZE } from '../../../shared/thumbnails/thumbnail.sizes';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { queryString, singleParam } from '../http/request';
import type { ThumbnailService } from './thumbnail.service';

/**
 * A thumbnail's URL keeps serving the file's current picture, which changes when the content does:
 * browsers reuse it for a minute, then revalidate by ETag (digest and size) for a 304.
 */
const CACHE_CONTROL = 'private, max-age=60';

function thumbnailSize(text: string | undefined): number {
  if (text === undefined || text === '') return DEFAULT_THUMBNAIL_SIZE;
  const size = /^[0-9]{1,4}$/.test(text) ? Number(text) : NaN;
  if (!(size >= MIN_THUMBNAIL_SIZE && size <= MAX_THUMBNAIL_SIZE)) {
    throw invalid(`size must be an integer from ${MIN_THUMBNAIL_SIZE} to ${MAX_THUMBNAIL_SIZE}`, { field: 'size' });
  }
  return size;
}

/** GET /files/:id/thumbnail (docs/WEBAPP.md, "Pictures"): a WebP made by the workers, never the original. */
export function thumbnailRoutes(thumbnails: ThumbnailService, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.get('/files/:id/thumbnail', authenticated, async (req, res) => {
    const size = thumbnailSize(queryString(req, 'size'));
    // A 404 now may be a 200 in a moment, once a worker made the thumbnail.
    res.setHeader('Cache-Control', 'no-store');
    const found = await thumbnails.find(principalOf(req).userId, singleParam(req, 'id'), size);
    res.setHeader('Cache-Control', found.standIn ? 'no-store' : CACHE_CONTROL);
    res.setHeader('ETag', found.etag);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (req.headers['if-none-match']?.split(',').some((tag) => tag.trim() === found.etag)) {
      res.status(304).end();
      return;
    }
    res.status(200).type('image/webp').setHeader('Content-Length', found.body.length);
    res.setHeader('Content-Disposition', 'inline; filename="thumbnail.webp"');
    res.end(found.body);
  });

  return router;
}
