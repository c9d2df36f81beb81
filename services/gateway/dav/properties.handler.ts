import { once } from 'node:events';
import { DavError, statusLine } from './dav.errors';
import { hrefOf } from './dav.paths';
import { isLiveProperty, propResponse, type PropContext, type PropName, type PropRequest } from './dav.props';
import type { DavRequest } from './dav.request';
import { MAX_PROPERTIES_BYTES, MAX_PROPERTY_LOCAL_NAME, MAX_PROPERTY_NAMESPACE, type DeadProperty } from './dav.service';
import { folderIdOf, isCollection, type DavNode } from './dav.tree';
import { child, dav, DAV_NS, elements, named, ROOT_NAMESPACES, serialize, x, type XmlElement, type XNode } from './dav.xml';
import { readXml } from './xml.reader';
import { contentBytes } from './xml.writer';

const XML_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>\n';
/** A multistatus is streamed: its opening and closing tags around one serialised response per resource. */
const MULTISTATUS_OPEN = `${XML_DECLARATION}<D:multistatus xmlns:D="${ROOT_NAMESPACES['xmlns:D']}" xmlns:fs="${ROOT_NAMESPACES['xmlns:fs']}">`;
const MULTISTATUS_CLOSE = '</D:multistatus>\n';
/** Members read per query of a PROPFIND Depth 1: what is held in memory at once. */
const PAGE = 500;

const nameOf = (e: XmlElement): PropName => ({ ns: e.ns, local: e.local });

function parsePropfind(body: XmlElement | undefined): PropRequest {
  if (!body) return { kind: 'allprop', include: [] };
  if (body.ns !== DAV_NS || body.local !== 'propfind') throw new DavError(400, 'the body must be a DAV:propfind element');
  if (child(body, DAV_NS, 'propname')) return { kind: 'propname' };
  if (child(body, DAV_NS, 'allprop')) return { kind: 'allprop', include: elements(child(body, DAV_NS, 'include') ?? { ns: '', local: '', attrs: [], children: [] }).map(nameOf) };
  const prop = child(body, DAV_NS, 'prop');
  if (prop) return { kind: 'prop', names: elements(prop).map(nameOf) };
  throw new DavError(400, 'DAV:propfind must hold DAV:prop, DAV:allprop or DAV:propname');
}

const wantsDead = (request: PropRequest) => request.kind !== 'prop' || request.names.some((n) => !isLiveProperty(n));
const wantsLocks = (request: PropRequest) => request.kind === 'allprop' || (request.kind === 'prop' && request.names.some((n) => n.ns === DAV_NS && n.local === 'lockdiscovery'));
const wantsQuota = (request: PropRequest) =>
  request.kind === 'prop' && request.names.some((n) => n.ns === DAV_NS && (n.local === 'quota-used-bytes' || n.local === 'quota-available-bytes'));

/**
 * PROPFIND, Depth 0 or 1 (infinity: 403 propfind-finite-depth). The answer is streamed: the
 * target's response, then its members a page at a time, each page's dead properties and locks in
 * one query, one response written at a time, waiting for the socket to drain, so memory stays the
 * same however large the folder and no listing holds the event loop for long.
 */
export async function propfind(r: DavRequest): Promise<void> {
  const depth = r.depth('infinity');
  if (depth === 'infinity') throw new DavError(403, 'Depth infinity is not supported', 'propfind-finite-depth');
  const request = parsePropfind(await readXml(r.req));
  const target = await r.resolve();
  if (!target.node) throw new DavError(404, 'nothing at this path');
  const { quota } = r.services;
  const withLocks = wantsLocks(request);
  const ctx: PropContext = { locks: withLocks ? await r.locksCovering(target.path.key) : [], quota: wantsQuota(request) ? await quota.figures(r.userId) : undefined };
  const dead = wantsDead(request);
  const ownDead = dead && target.node.kind === 'resource' ? await r.services.dav.properties(r.userId, target.node.record.id) : [];

  const { res } = r;
  res.status(207).setHeader('Content-Type', 'application/xml; charset=utf-8');
  const write = async (text: string) => {
    if (!res.write(text) && !res.destroyed) await Promise.race([once(res, 'drain'), once(res, 'close')]);
  };
  await write(MULTISTATUS_OPEN + serialize(propResponse(target.path.segments, target.node, request, ownDead, ctx)));
  if (depth === '1' && isCollection(target.node)) {
    const folderId = folderIdOf(target.node);
    let after = null;
    for (;;) {
      if (res.destroyed) return;
      const page = await r.services.tree.members(r.userId, folderId, after, PAGE);
      if (page.length === 0) break;
      const props = dead ? await r.services.dav.propertiesOf(r.userId, page.map((m) => m.id)) : new Map<string, DeadProperty[]>();
      const memberPaths = page.map((m) => [...target.path.segments, m.name]);
      const pageCtx: PropContext = withLocks
        ? { ...ctx, locks: await r.lookupLocks({ covering: [target.path.key], rootedAt: memberPaths.map((s) => s.map((n) => `/${n}`).join('')) }) }
        : ctx;
      for (const [i, m] of page.entries()) {
        if (res.destroyed) return;
        await write(serialize(propResponse(memberPaths[i]!, { kind: 'resource', record: m }, request, props.get(m.id) ?? [], pageCtx)));
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1]!;
    }
  }
  res.end(MULTISTATUS_CLOSE);
}

interface PatchOp {
  set: boolean;
  element: XmlElement;
}

/**
 * PROPPATCH: dead properties set and removed in document order, all or nothing (RFC 4918 9.2). A
 * live property is protected (403 cannot-modify-protected-property); a property that cannot be
 * stored (507): a name longer than its column, or a resource that would hold more than 100
 * properties or 64 KiB of them (dav.service.ts). Either fails the whole request, the others
 * answered 424, and nothing is kept.
 */
export async function proppatch(r: DavRequest): Promise<void> {
  const body = await readXml(r.req);
  if (!body || body.ns !== DAV_NS || body.local !== 'propertyupdate') throw new DavError(400, 'the body must be a DAV:propertyupdate element');
  const target = await r.resolve();
  if (!target.node) throw new DavError(404, 'nothing at this path');
  await r.checkIf(target);
  await r.guard({ path: target.path.key });

  const ops: PatchOp[] = [];
  for (const instruction of elements(body)) {
    if (instruction.ns !== DAV_NS || (instruction.local !== 'set' && instruction.local !== 'remove')) continue;
    for (const prop of elements(instruction).filter((e) => e.ns === DAV_NS && e.local === 'prop')) {
      for (const element of elements(prop)) ops.push({ set: instruction.local === 'set', element });
    }
  }
  const failures = new Map<PatchOp, number>();
  for (const op of ops) {
    if (isLiveProperty(nameOf(op.element)) || target.node.kind === 'root') failures.set(op, 403);
    else if (op.set && !storable(op.element)) failures.set(op, 507);
  }
  if (failures.size === 0 && target.node.kind === 'resource') {
    const final = new Map<string, PatchOp>();
    for (const op of ops) final.set(`${op.element.ns} ${op.element.local}`, op);
    const set = [...final.values()].filter((o) => o.set).map((o) => ({ namespace: o.element.ns, localName: o.element.local, value: JSON.stringify(o.element) }));
    const remove = [...final.values()].filter((o) => !o.set).map((o) => ({ namespace: o.element.ns, localName: o.element.local }));
    const outcome = await r.services.dav.patchProperties(r.userId, target.node.record.id, set, remove);
    if (outcome === 'missing') throw new DavError(404, 'nothing at this path');
    if (outcome === 'refused') for (const op of ops) if (op.set) failures.set(op, 507);
  }
  sendPatchResult(r, target.path.segments, target.node, ops, failures);
}

/** A property a resource can hold at all: names that fit their columns, content within 64 KiB. */
const storable = (e: XmlElement): boolean =>
  [...e.ns].length <= MAX_PROPERTY_NAMESPACE && [...e.local].length <= MAX_PROPERTY_LOCAL_NAME && contentBytes(e) <= MAX_PROPERTIES_BYTES;

function sendPatchResult(r: DavRequest, segments: string[], node: DavNode, ops: PatchOp[], failures: Map<PatchOp, number>): void {
  const byStatus = new Map<number, PatchOp[]>();
  for (const op of ops) {
    const status = failures.size === 0 ? 200 : (failures.get(op) ?? 424);
    byStatus.set(status, [...(byStatus.get(status) ?? []), op]);
  }
  const propstats: XNode[] = [...byStatus].map(([status, list]) =>
    dav('propstat', [
      dav('prop', list.map((op) => named(op.element.ns, op.element.local))),
      dav('status', statusLine(status)),
      ...(status === 403 ? [dav('error', [dav('cannot-modify-protected-property')])] : []),
    ]),
  );
  const multistatus = x('D:multistatus', [dav('response', [dav('href', hrefOf(segments, isCollection(node))), ...propstats])], ROOT_NAMESPACES);
  r.res.status(207).type('application/xml; charset=utf-8').send(XML_DECLARATION + serialize(multistatus));
}

export { XML_DECLARATION };
