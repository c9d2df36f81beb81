import { Router } from 'express';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import type { File, Folder, TrashItem } from '../../../shared/protocol';
import { toFileView, toFolderView } from '../files/files.presenter';
import { paging, singleParam } from '../http/request';
import type { ResourceRecord, TrashService } from './trash.service';

export const toView = (r: ResourceRecord): File | Folder => (r.type === 'file' ? toFileView(r) : toFolderView(r));

/** The File or Folder representation plus what the trash adds: its type and when it was deleted. */
export function toTrashItemView(r: ResourceRecord): TrashItem {
  const deletedAt = (r.deletedAt ?? r.updatedAt).toISOString();
  return r.type === 'file' ? { ...toFileView(r), type: 'file', deletedAt } : { ...toFolderView(r), type: 'folder', deletedAt };
}

export function trashRoutes(trash: TrashService, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.get('/trash', authenticated, async (req, res) => {
    const { limit, offset } = paging(req);
    const page = await trash.list(principalOf(req).userId, limit, offset);
    res.json({ items: page.items.map(toTrashItemView), total: page.total, limit, offset });
  });

  router.post('/trash/:id/restore', authenticated, async (req, res) => {
    const restored = await trash.restore(principalOf(req), singleParam(req, 'id'));
    res.json({ ...toView(restored), type: restored.type });
  });

  router.delete('/trash/:id', authenticated, async (req, res) => {
    await trash.purge(principalOf(req), singleParam(req, 'id'));
    res.status(204).end();
  });

  return router;
}
