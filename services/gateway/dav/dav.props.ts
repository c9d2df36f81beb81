import type { XMLBuilder } from 'xmlbuilder2/lib/interfaces';
import type { DeadProperty } from '../../../shared/db/dav.repository';
import { statusLine } from './dav.errors';
import { locksCovering, type DavLock } from './dav.locks';
import { hrefOf } from './dav.paths';
import { isCollection, type DavNode } from './dav.tree';
import { appendElement, dav, davElement, DAV_NS, FS_NS, named, type XmlElement } from './dav.xml';

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

type Write = (el: XMLBuilder) => void;

const LIVE_DAV = ['resourcetype', 'displayname', 'getcontentlength', 'getcontenttype', 'getetag', 'getlastmodified', 'creationdate', 'supportedlock', 'lockdiscovery'];
const QUOTA = ['quota-used-bytes', 'quota-available-bytes'];
const LIVE_FS = ['id', 'rev', 'sha256'];

/** True for the properties the service computes; PROPPATCH may not set or remove them. */
export const isLiveProperty = (p: PropName): boolean =>
  (p.ns === DAV_NS && (LIVE_DAV.includes(p.local) || QUOTA.includes(p.local))) || (p.ns === FS_NS && LIVE_FS.includes(p.local));

/** The ETag of a file's content, as the API gives it; none for a folder or a file without content. */
export const etagOf = (node: DavNode): string | undefined =>
  node.kind === 'resource' && node.record.contentSha256 ? `"${node.record.contentSha256}"` : undefined;

export function writeActiveLock(parent: XMLBuilder, lock: DavLock): void {
  const active = dav(parent, 'activelock');
  dav(dav(active, 'locktype'), 'write');
  dav(dav(active, 'lockscope'), lock.scope);
  dav(active, 'depth', lock.depth === '0' ? '0' : 'infinity');
  if (lock.owner) {
    const owner = dav(active, 'owner');
    for (const c of lock.owner.children) {
      if (typeof c === 'string') owner.txt(c);
      else appendElement(owner, c);
    }
  }
  dav(active, 'timeout', `Second-${Math.max(0, Math.round((lock.expiresAt - Date.now()) / 1000))}`);
  dav(dav(active, 'locktoken'), 'href', lock.token);
  dav(dav(active, 'lockroot'), 'href', lock.href);
}

/** The value of a live property of `node`; undefined when it has none; null when the name is not live. */
function liveValue(name: PropName, node: DavNode, pathKey: string, ctx: PropContext): Write | undefined | null {
  const record = node.kind === 'resource' ? node.record : undefined;
  const file = record?.type === 'file' ? record : undefined;
  if (name.ns === FS_NS) {
    if (name.local === 'id') return record ? (el) => el.txt(record.id) : undefined;
    if (name.local === 'rev') return record ? (el) => el.txt(String(record.rev)) : undefined;
    if (name.local === 'sha256') return file?.contentSha256 ? (el) => el.txt(file.contentSha256!) : undefined;
    return null;
  }
  if (name.ns !== DAV_NS) return null;
  switch (name.local) {
    case 'resourcetype':
      return isCollection(node) ? (el) => void dav(el, 'collection') : () => undefined;
    case 'displayname':
      return record ? (el) => el.txt(record.name) : undefined;
    case 'getcontentlength':
      return file ? (el) => el.txt(String(file.storageKey ? file.sizeBytes : 0)) : undefined;
    case 'getcontenttype':
      return file ? (el) => el.txt(file.mimeType || 'application/octet-stream') : undefined;
    case 'getetag': {
      const etag = etagOf(node);
      return etag ? (el) => el.txt(etag) : undefined;
    }
    case 'getlastmodified':
      return record ? (el) => el.txt(record.updatedAt.toUTCString()) : undefined;
    case 'creationdate':
      return record ? (el) => el.txt(record.createdAt.toISOString()) : undefined;
    case 'supportedlock':
      return (el) => {
        for (const scope of ['exclusive', 'shared']) {
          const entry = dav(el, 'lockentry');
          dav(dav(entry, 'lockscope'), scope);
          dav(dav(entry, 'locktype'), 'write');
        }
      };
    case 'lockdiscovery':
      return (el) => {
        for (const lock of locksCovering(ctx.locks, pathKey)) writeActiveLock(el, lock);
      };
    case 'quota-used-bytes':
      return ctx.quota ? (el) => el.txt(String(ctx.quota!.usedBytes)) : undefined;
    case 'quota-available-bytes':
      return ctx.quota && ctx.quota.availableBytes !== null ? (el) => el.txt(String(ctx.quota!.availableBytes)) : undefined;
  }
  return null;
}

/** Names allprop answers with: the live properties of RFC 4918 and of urn:filesync (RFC 4331's are asked by name). */
const ALLPROP: PropName[] = [...LIVE_DAV.map((local) => ({ ns: DAV_NS, local })), ...LIVE_FS.map((local) => ({ ns: FS_NS, local }))];

const deadKey = (ns: string, local: string) => `${ns} ${local}`;

/** One `<D:response>` of a multistatus for `node`, as an element builder of its own. */
export function propResponse(segments: string[], node: DavNode, request: PropRequest, dead: DeadProperty[], ctx: PropContext): XMLBuilder {
  const response = davElement('response');
  dav(response, 'href', hrefOf(segments, isCollection(node)));
  const pathKey = segments.map((s) => `/${s}`).join('');
  const okStat = dav(response, 'propstat');
  const found = dav(okStat, 'prop');
  const missing: PropName[] = [];
  let foundAny = false;
  const put = (name: PropName, write: Write) => {
    write(named(found, name.ns, name.local));
    foundAny = true;
  };
  const deadByKey = new Map(dead.map((d) => [deadKey(d.namespace, d.localName), d]));
  const putDead = (d: DeadProperty) => {
    const el = JSON.parse(d.value) as XmlElement;
    appendElement(found, el);
    foundAny = true;
  };

  if (request.kind === 'propname') {
    for (const name of [...ALLPROP, ...QUOTA.map((local) => ({ ns: DAV_NS, local }))]) {
      if (liveValue(name, node, pathKey, ctx)) put(name, () => undefined);
    }
    for (const d of dead) put({ ns: d.namespace, local: d.localName }, () => undefined);
  } else if (request.kind === 'allprop') {
    for (const name of ALLPROP) {
      const write = liveValue(name, node, pathKey, ctx);
      if (write) put(name, write);
    }
    for (const d of dead) putDead(d);
    for (const name of request.include) {
      if (ALLPROP.some((n) => n.ns === name.ns && n.local === name.local) || deadByKey.has(deadKey(name.ns, name.local))) continue;
      const write = liveValue(name, node, pathKey, ctx);
      if (write) put(name, write);
    }
  } else {
    for (const name of request.names) {
      const write = liveValue(name, node, pathKey, ctx);
      const d = deadByKey.get(deadKey(name.ns, name.local));
      if (write) put(name, write);
      else if (write === null && d) putDead(d);
      else missing.push(name);
    }
  }

  if (foundAny || missing.length === 0) dav(okStat, 'status', statusLine(200));
  else okStat.remove();
  if (missing.length > 0) {
    const propstat = dav(response, 'propstat');
    const prop = dav(propstat, 'prop');
    for (const name of missing) named(prop, name.ns, name.local);
    dav(propstat, 'status', statusLine(404));
  }
  return response;
}
