import type { DavRepository, DeadProperty } from '../../../shared/db/repositories/dav.repository';
import type { ResourceRecord } from '../../../shared/db/repositories/resource.record';

export type { DeadProperty, ResourceRecord };

/** The last member of the previous page of a folder's members. */
export type MemberCursor = Pick<ResourceRecord, 'type' | 'name' | 'id'>;

/**
 * What WebDAV reads of the tree beyond the API's (a child by name, a folder's members in name
 * order) and its dead properties. Changes to the tree itself go through the API's services
 * (dav.tree.ts); every call is scoped to the owner.
 */
export class DavService {
  constructor(private readonly repo: DavRepository) {}

  /** The active child of `parentId` (null: the root) named exactly `name`. */
  child(userId: string, parentId: string | null, name: string): Promise<ResourceRecord | undefined> {
    return this.repo.child(userId, parentId, name);
  }

  /** A page of a folder's active members, folders first then files, each by name then id, after `after`. */
  members(userId: string, folderId: string | null, after: MemberCursor | null, limit: number): Promise<ResourceRecord[]> {
    return this.repo.members(userId, folderId, after ? { type: after.type, name: after.name, id: after.id } : null, limit);
  }

  /** The dead properties of one resource. */
  properties(userId: string, resourceId: string): Promise<DeadProperty[]> {
    return this.repo.properties(userId, resourceId);
  }

  /** The dead properties of several resources (a page of a PROPFIND Depth 1), by resource id. */
  propertiesOf(userId: string, resourceIds: string[]): Promise<Map<string, DeadProperty[]>> {
    return this.repo.propertiesOf(userId, resourceIds);
  }

  /** Sets and removes dead properties of one resource, all or nothing (PROPPATCH). */
  patchProperties(userId: string, resourceId: string, set: DeadProperty[], remove: Array<{ namespace: string; localName: string }>): Promise<void> {
    return this.repo.patch(userId, resourceId, set, remove);
  }

  /** Copies every dead property of `fromId` to `toId` (COPY keeps them with the copy). */
  copyProperties(userId: string, fromId: string, toId: string): Promise<void> {
    return this.repo.copyProperties(userId, fromId, toId);
  }
}
