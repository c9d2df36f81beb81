import type { DavRepository, DeadProperty } from '../../../shared/db/repositories/dav.repository';
import type { ResourceRecord } from '../../../shared/db/repositories/resource.record';
import type { XmlElement } from './dav.xml';
import { contentBytes } from './xml.writer';

export type { DeadProperty, ResourceRecord };

/** Most dead properties one resource holds. */
export const MAX_PROPERTIES = 100;
/** Most bytes of dead properties one resource holds: their contents as XML, added up. */
export const MAX_PROPERTIES_BYTES = 64 * 1024;
/** Longest namespace and local name of a dead property (their columns). */
export const MAX_PROPERTY_NAMESPACE = 1024;
export const MAX_PROPERTY_LOCAL_NAME = 255;

/** What a stored property counts against MAX_PROPERTIES_BYTES. */
export const propertyBytes = (p: DeadProperty): number => contentBytes(JSON.parse(p.value) as XmlElement);

const keyOf = (p: { namespace: string; localName: string }): string => `${p.namespace} ${p.localName}`;

/** True when these properties fit one resource's limits. */
export function withinLimits(props: DeadProperty[]): boolean {
  if (props.length > MAX_PROPERTIES) return false;
  let bytes = 0;
  for (const p of props) {
    bytes += propertyBytes(p);
    if (bytes > MAX_PROPERTIES_BYTES) return false;
  }
  return true;
}

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

  /**
   * Sets and removes dead properties of one resource, all or nothing (PROPPATCH): 'refused', and
   * nothing changed, when the resource would hold more than MAX_PROPERTIES or MAX_PROPERTIES_BYTES.
   */
  patchProperties(
    userId: string,
    resourceId: string,
    set: DeadProperty[],
    remove: Array<{ namespace: string; localName: string }>,
  ): Promise<'ok' | 'refused' | 'missing'> {
    const changed = new Set([...set, ...remove].map(keyOf));
    return this.repo.patch(userId, resourceId, set, remove, (existing) => withinLimits([...existing.filter((p) => !changed.has(keyOf(p))), ...set]));
  }

  /**
   * Copies the dead properties of `fromId` to `toId`, a new resource (COPY keeps them with the
   * copy): in name order, those that fit the limits, so a copy never holds more than its resource may.
   */
  async copyProperties(userId: string, fromId: string, toId: string): Promise<void> {
    const kept: DeadProperty[] = [];
    let bytes = 0;
    for (const p of await this.repo.properties(userId, fromId)) {
      const size = propertyBytes(p);
      if (kept.length >= MAX_PROPERTIES || bytes + size > MAX_PROPERTIES_BYTES) continue;
      kept.push(p);
      bytes += size;
    }
    if (kept.length > 0) await this.repo.patch(userId, toId, kept, [], (existing) => withinLimits([...existing, ...kept]));
  }
}
