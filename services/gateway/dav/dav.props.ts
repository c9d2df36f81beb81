import type { DeadProperty } from './dav.service';
import { statusLine } from './dav.errors';
import { locksCovering, type DavLock } from './dav.locks';
import { hrefOf } from './dav.paths';
import { isCollection, type DavNode } from './dav.tree';
import { dav, DAV_NS, FS_NS, named, preserialized, raw, text, type XmlElement, type XNode } from './dav.xml';
import { writeContent, writeElement } from './xml.writer';

export interface PropName {
  ns: string;
  local: string;
}

/** What a PROPFIND asks for (RFC 4918 9.1). */
export type PropRequest = { kind: 'allprop'; include: PropName[] } | { kind: 'propname' } | { kind: 'prop'; names: PropName[] };

/** Quota of the caller (RFC 4331); `availableBytes` null while the user has no quota. */
export interface QuotaFigures {
  usedBytes: number;
  availableBytes: number | null;
}

export interface PropContext {
  locks: DavLock[];
  quota?: QuotaFigures;
}

const LIVE_DAV = ['resourcetype', 'displayname', 'getcontentlength', 'getcontenttype', 'getetag', 'getlastmodified', 'creationdate', 'supportedlock', 'lockdiscovery'];
const QUOTA = ['quota-used-bytes', 'quota-available-bytes'];
const LIVE_FS = ['id', 'rev', 'sha256'];

/** True for the properties the service computes; PROPPATCH may not set or remove them. */
export const isLiveProperty = (p: PropName): boolean =>
  (p.ns === DAV_NS && (LIVE_DAV.includes(p.local) || QUOTA.includes(p.local))) || (p.ns === FS_NS && LIVE_FS.includes(p.local));

/** The ETag of a file's content, as the API gives it; none for a folder or a file without content. */
export const etagOf = (node: DavNode): string | undefined =>
  node.kind === 'resource' && node.record.contentSha256 ? `"${node.record.contentSha256}"` : undefined;

export function activeLock(lock: DavLock): XNode {
  return dav('activelock', [
    dav('locktype', [dav('write')]),
    dav('lockscope', [dav(lock.scope)]),
    dav('depth', lock.depth === '0' ? '0' : 'infinity'),
    ...(lock.owner ? [dav('owner', [raw(writeContent(lock.owner))])] : []),
    dav('timeout', `Second-${Math.max(0, Math.round((lock.expiresAt - Date.now()) / 1000))}`),
    dav('locktoken', [dav('href', lock.token)]),
    dav('lockroot', [dav('href', lock.href)]),
  ]);
}

const SUPPORTED_LOCK: XNode[] = [preserialized(['exclusive', 'shared'].map((scope) => dav('lockentry', [dav('lockscope', [dav(scope)]), dav('locktype', [dav('write')])])))];

/** The children of a live property of `node`; undefined when it has none; null when the name is not live. */
function liveValue(name: PropName, node: DavNode, pathKey: string, ctx: PropContext): XNode[] | undefined | null {
  const record = node.kind === 'resource' ? node.record : undefined;
  const file = record?.type === 'file' ? record : undefined;
  if (name.ns === FS_NS) {
    if (name.local === 'id') return record ? [text(record.id)] : undefined;
    if (name.local === 'rev') return record ? [text(String(record.rev))] : undefined;
    if (name.local === 'sha256') return file?.contentSha256 ? [text(file.contentSha256)] : undefined;
    return null;
  }
  if (name.ns !== DAV_NS) return null;
  switch (name.local) {
    case 'resourcetype':
      return isCollection(node) ? [dav('collection')] : [];
    case 'displayname':
      return record ? [text(record.name)] : undefined;
    case 'getcontentlength':
      return file ? [text(String(file.storageKey ? file.sizeBytes : 0))] : undefined;
    case 'getcontenttype':
      return file ? [text(file.mimeType || 'application/octet-stream')] : undefined;
    case 'getetag': {
      const etag = etagOf(node);
      return etag ? [text(etag)] : undefined;
    }
    case 'getlastmodified':
      return record ? [text(record.updatedAt.toUTCString())] : undefined;
    case 'creationdate':
      return record ? [text(record.createdAt.toISOString())] : undefined;
    case 'supportedlock':
      return SUPPORTED_LOCK;
    case 'lockdiscovery':
      return locksCovering(ctx.locks, pathKey).map(activeLock);
    case 'quota-used-bytes':
      return ctx.quota ? [text(String(ctx.quota.usedBytes))] : undefined;
    case 'quota-available-bytes':
      return ctx.quota && ctx.quota.availableBytes !== null ? [text(String(ctx.quota.availableBytes))] : undefined;
  }
  return null;
}

/** Names allprop answers with: the live properties of RFC 4918 and of urn:filesync (RFC 4331's are asked by name). */
const ALLPROP: PropName[] = [...LIVE_DAV.map((local) => ({ ns: DAV_NS, local })), ...LIVE_FS.map((local) => ({ ns: FS_NS, local }))];

const deadKey = (ns: string, local: string) => `${ns} ${local}`;
const deadNode = (d: DeadProperty): XNode => raw(writeElement(JSON.parse(d.value) as XmlElement));

/** One `<D:response>` of a multistatus for `node`. */
export function propResponse(segments: string[], node: DavNode, request: PropRequest, dead: DeadProperty[], ctx: PropContext): XNode {
  const pathKey = segments.map((s) => `/${s}`).join('');
  const found: XNode[] = [];
  const missing: XNode[] = [];
  const deadByKey = new Map(dead.map((d) => [deadKey(d.namespace, d.localName), d]));

  if (request.kind === 'propname') {
    for (const name of [...ALLPROP, ...QUOTA.map((local) => ({ ns: DAV_NS, local }))]) {
      if (liveValue(name, node, pathKey, ctx)) found.push(named(name.ns, name.local));
    }
    for (const d of dead) found.push(named(d.namespace, d.localName));
  } else if (request.kind === 'allprop') {
    for (const name of ALLPROP) {
      const value = liveValue(name, node, pathKey, ctx);
      if (value) found.push(named(name.ns, name.local, value));
    }
    for (const d of dead) found.push(deadNode(d));
    for (const name of request.include) {
      if (ALLPROP.some((n) => n.ns === name.ns && n.local === name.local) || deadByKey.has(deadKey(name.ns, name.local))) continue;
      const value = liveValue(name, node, pathKey, ctx);
      if (value) found.push(named(name.ns, name.local, value));
    }
  } else {
    for (const name of request.names) {
      const value = liveValue(name, node, pathKey, ctx);
      const d = deadByKey.get(deadKey(name.ns, name.local));
      if (value) found.push(named(name.ns, name.local, value));
      else if (value === null && d) found.push(deadNode(d));
      else missing.push(named(name.ns, name.local));
    }
  }

  const children: XNode[] = [dav('href', hrefOf(segments, isCollection(node)))];
  if (found.length > 0 || missing.length === 0) children.push(dav('propstat', [dav('prop', found), dav('status', statusLine(200))]));
  if (missing.length > 0) children.push(dav('propstat', [dav('prop', missing), dav('status', statusLine(404))]));
  return dav('response', children);
}
