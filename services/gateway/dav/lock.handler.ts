import { Readable } from 'node:stream';
import type { Request } from 'express';
import { DavError, LIMIT_CONDITION } from './dav.errors';
import { lockTimeout, type DavLock } from './dav.locks';
import { hrefOf, parentOf } from './dav.paths';
import { activeLock } from './dav.props';
import type { DavRequest } from './dav.request';
import { folderIdOf, isCollection } from './dav.tree';
import { child, dav, DAV_NS, elements, ROOT_NAMESPACES, serialize, x } from './dav.xml';
import { readXml } from './xml.reader';
import { contentBytes } from './xml.writer';
import { XML_DECLARATION } from './properties.handler';

/** Largest lock owner kept (its content, as XML). */
export const MAX_LOCK_OWNER_BYTES = 4 * 1024;

function sendLock(r: DavRequest, lock: DavLock, status: number): void {
  const prop = x('D:prop', [dav('lockdiscovery', [activeLock(lock)])], ROOT_NAMESPACES);
  r.res.setHeader('Lock-Token', `<${lock.token}>`);
  r.res.status(status).type('application/xml; charset=utf-8').send(XML_DECLARATION + serialize(prop));
}

/**
 * LOCK (RFC 4918 9.10): a new exclusive or shared write lock, depth 0 or infinity, held in Redis
 * (dav.locks.ts); on a path where nothing is, an empty file is created first (201). Without a body
 * it refreshes the lock the If header names.
 */
export async function lock(r: DavRequest): Promise<void> {
  const body = await readXml(r.req);
  const timeout = lockTimeout(r.header('timeout'));
  const target = await r.resolve();
  const { locks, tree } = r.services;

  if (!body) {
    if (!target.node) throw new DavError(404, 'nothing at this path');
    const held = (await r.locksCovering(target.path.key)).find((l) => r.tokens.has(l.token));
    if (!held) throw new DavError(412, 'the If header names no lock of this resource', 'lock-token-matches-request-uri');
    const refreshed = await locks.refresh(r.userId, held, timeout);
    if (!refreshed) throw new DavError(412, 'the lock has expired');
    sendLock(r, refreshed, 200);
    return;
  }

  if (body.ns !== DAV_NS || body.local !== 'lockinfo') throw new DavError(400, 'the body must be a DAV:lockinfo element');
  const scopeElement = child(body, DAV_NS, 'lockscope');
  const scope = scopeElement && child(scopeElement, DAV_NS, 'shared') ? 'shared' : scopeElement && child(scopeElement, DAV_NS, 'exclusive') ? 'exclusive' : undefined;
  if (!scope) throw new DavError(400, 'DAV:lockscope must be exclusive or shared');
  const type = child(body, DAV_NS, 'locktype');
  if (!type || !child(type, DAV_NS, 'write')) throw new DavError(400, 'only write locks exist');
  const depth = r.depth('infinity');
  if (depth === '1') throw new DavError(400, 'a lock has Depth 0 or infinity');
  const owner = child(body, DAV_NS, 'owner');
  if (owner && contentBytes(owner) > MAX_LOCK_OWNER_BYTES) throw new DavError(507, `a lock's owner is at most ${MAX_LOCK_OWNER_BYTES} bytes`, LIMIT_CONDITION);

  await r.checkIf(target);
  if (!target.node) {
    if (!target.parent) throw new DavError(409, 'the parent collection does not exist');
    await r.guard({ path: parentOf(target.path).key });
  }
  // Granted before an unmapped path gets its empty file, so a refused lock leaves no file behind.
  const granted = await locks.grant(r.userId, {
    path: target.path.key,
    href: hrefOf(target.path.segments, target.node ? isCollection(target.node) : false),
    ...(target.node?.kind === 'resource' && { resourceId: target.node.record.id }),
    depth: depth === '0' ? '0' : 'infinity',
    scope,
    owner: owner && elements(owner).length + owner.children.length > 0 ? owner : null,
    timeoutSeconds: timeout,
  });
  const created = !target.node;
  if (!target.node) {
    const name = target.path.segments[target.path.segments.length - 1]!;
    try {
      await tree.createFile(r.writer, folderIdOf(target.parent!), name, Readable.from([]) as unknown as Request, undefined);
    } catch (err) {
      await locks.remove(r.userId, granted.token);
      throw err;
    }
  }
  sendLock(r, granted, created ? 201 : 200);
}

/** UNLOCK: removes the lock the Lock-Token header names, when it covers the request's resource. */
export async function unlock(r: DavRequest): Promise<void> {
  const raw = r.header('lock-token')?.trim();
  const match = raw ? /^<(.+)>$/.exec(raw) : null;
  if (!match) throw new DavError(400, 'Lock-Token is required');
  const target = await r.resolve();
  if (!target.node) throw new DavError(404, 'nothing at this path');
  const held = (await r.locksCovering(target.path.key)).find((l) => l.token === match[1]);
  if (!held) throw new DavError(409, 'no such lock on this resource', 'lock-token-matches-request-uri');
  await r.services.locks.remove(r.userId, held.token);
  r.res.status(204).end();
}
