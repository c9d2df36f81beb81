import { notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import type { ChildSort, ListedChild, ListingRepository } from '../../../shared/db/repositories/listing.repository';
import type { PageResult } from '../../../shared/db/repositories/resource.record';
import type { ResourceRepository } from '../../../shared/db/repositories/resource.repository';

export interface ChildrenQuery {
  folderId: string | null;
  sort: ChildSort;
  descending: boolean;
  limit: number;
  offset: number;
}

/** One folder's children, folders first: what a file browser shows of a folder (GET /v1/items). */
export class ItemsService {
  constructor(
    private readonly resources: ResourceRepository,
    private readonly listing: ListingRepository,
  ) {}

  async children(userId: string, q: ChildrenQuery): Promise<PageResult<ListedChild>> {
    if (q.folderId !== null && !(isId(q.folderId) && (await this.resources.findActive(userId, q.folderId, 'folder')))) throw notFound('no such folder');
    return this.listing.listChildren(userId, q.folderId, q.sort, q.descending, q.limit, q.offset);
  }

  /** The folders from the root's child down to this one, for breadcrumbs. */
  async path(userId: string, folderId: string): Promise<Array<{ id: string; name: string }>> {
    const path = await this.listing.folderPath(userId, folderId);
    if (path.length === 0) throw notFound('no such folder');
    return path;
  }
}
