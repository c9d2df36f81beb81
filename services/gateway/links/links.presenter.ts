import type { LinkedResource, LinkRecord, PublicChild } from '../../../shared/db/repositories/link.repository';
import type { Link, PublicItem, PublicLink } from '../../../shared/protocol';

/** The owner's view of a link; `origin` is PUBLIC_URL, or the request's own origin. */
export function toLinkView(link: LinkRecord, origin: string): Link {
  return {
    id: link.id,
    token: link.token,
    url: `${origin}/s/${link.token}`,
    resourceId: link.resourceId,
    resourceType: link.resourceType,
    access: link.access,
    hasPassword: link.passwordHash !== null,
    expiresAt: link.expiresAt ? link.expiresAt.toISOString() : null,
    maxDownloads: link.maxDownloads,
    downloads: link.downloads,
    deviceId: link.deviceId,
    createdAt: link.createdAt.toISOString(),
  };
}

/** What anyone holding the token learns: the link's terms and the resource's name, nothing of its owner. */
export function toPublicLinkView(link: LinkRecord, resource: LinkedResource): PublicLink {
  return {
    access: link.access,
    hasPassword: link.passwordHash !== null,
    expiresAt: link.expiresAt ? link.expiresAt.toISOString() : null,
    resource: resource.type === 'file' ? { type: 'file', name: resource.name, size: resource.sizeBytes } : { type: 'folder', name: resource.name },
  };
}

export function toPublicItem(child: PublicChild): PublicItem {
  const base = { type: child.type, id: child.id, name: child.name, updatedAt: child.updatedAt.toISOString() };
  return child.type === 'file' ? { ...base, size: child.sizeBytes, mimeType: child.mimeType ?? '' } : base;
}
