import { Router } from 'express';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { queryString } from '../http/request';
import type { TransferSlots } from '../http/transfer.slots';
import type { ContentStore } from '../../../shared/storage/content.store';
import { parseArchiveIds, type ArchiveService } from './archive.service';
import { sendArchive } from './zip.writer';

/**
 * `GET /v1/archive?ids=<id>,<id>...`: one ZIP of any of the caller's files and folders (docs/WEBAPP.md,
 * "Download as ZIP"). A GET, so a browser downloads it by following a link with the session cookie;
 * each user has at most ARCHIVES_PER_USER of them streaming per gateway.
 */
export function archiveRoutes(archives: ArchiveService, store: ContentStore, slots: TransferSlots, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();
  router.get('/archive', authenticated, async (req, res) => {
    const userId = principalOf(req).userId;
    const selection = await archives.select(userId, parseArchiveIds(queryString(req, 'ids')));
    await slots.enter(userId, res);
    res.attachment(selection.fileName);
    res.type('application/zip');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'no-store');
    await sendArchive(res, store, selection.entries);
  });
  return router;
}
