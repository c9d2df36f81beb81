import { Router } from 'express';
import { invalid } from '../../../shared/errors';
import type { ChildSort, ListedChild } from '../../../shared/db/repositories/listing.repository';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { optionalResourceId } from '../files/files.service';
import { paging, queryString, singleParam } from '../http/request';
import type { ItemsService } from './items.service';

const SORTS: ReadonlySet<string> = new Set<ChildSort>(['name', 'size', 'updatedAt']);

/** A child as the OpenAPI description shows it: `size` and `mimeType` for files only. */
function toItemView(child: ListedChild) {
  const base = { type: child.type, id: child.id, name: child.name };
  const times = { createdAt: child.createdAt, updatedAt: child.updatedAt };
  return child.type === 'file' ? { ...base, size: child.sizeBytes, mimeType: child.mimeType ?? '', ...times } : { ...base, ...times };
}

export function itemRoutes(items: ItemsService, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.get('/items', authenticated, async (req, res) => {
    const { limit, offset } = paging(req);
    // Any folderId that is not an active folder of the caller, a malformed one included, is a 404 (docs/WEBAPP.md).
    const folderId = queryString(req, 'folderId') || null;
    const sort = queryString(req, 'sort') ?? 'name';
    if (!SORTS.has(sort)) throw invalid('sort must be name, size or updatedAt', { field: 'sort' });
    const order = queryString(req, 'order') ?? 'asc';
    if (order !== 'asc' && order !== 'desc') throw invalid('order must be asc or desc', { field: 'order' });
    const page = await items.children(principalOf(req).userId, { folderId, sort: sort as ChildSort, descending: order === 'desc', limit, offset });
    res.status(200).json({ items: page.items.map(toItemView), total: page.total, limit, offset });
  });

  // The breadcrumbs of a folder: it and its ancestors, root side first.
  router.get('/folders/:id/path', authenticated, async (req, res) => {
    const id = optionalResourceId(singleParam(req, 'id'), 'id');
    if (id === null) throw invalid('id is required');
    res.status(200).json({ items: await items.path(principalOf(req).userId, id) });
  });

  return router;
}
