import { DavError } from './dav.errors';
import { isWithin, parentOf } from './dav.paths';
import type { DavRequest } from './dav.request';
import type { ResourceRecord } from './dav.service';
import { folderIdOf, isCollection, type DavNode, type Writer } from './dav.tree';

const PAGE = 500;

/** MKCOL: the API's folder create op (201); a body is 415, an existing path 405, a missing parent 409. */
export async function mkcol(r: DavRequest): Promise<void> {
  const { req } = r;
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (hasBody) {
    req.resume();
    throw new DavError(415, 'MKCOL takes no body');
  }
  const target = await r.resolve();
  if (target.node) {
    r.res.setHeader('Allow', 'OPTIONS, PROPFIND, PROPPATCH, DELETE, COPY, MOVE, LOCK, UNLOCK');
    throw new DavError(405, 'something already exists at this path');
  }
  if (!target.parent) throw new DavError(409, 'the parent collection does not exist');
  await r.checkIf(target);
  await r.guard({ path: parentOf(target.path).key });
  await r.services.tree.createFolder(r.writer, folderIdOf(target.parent), target.path.segments[target.path.segments.length - 1]!);
  r.res.status(201).end();
}

/** DELETE: to the trash, a collection with everything in it, as the API's delete op; its locks go. */
export async function remove(r: DavRequest): Promise<void> {
  const target = await r.resolve();
  if (!target.node) throw new DavError(404, 'nothing at this path');
  if (target.node.kind === 'root') throw new DavError(403, 'the root collection cannot be deleted');
  await r.checkIf(target);
  await r.guard({ path: target.path.key, tree: true }, { path: parentOf(target.path).key });
  await r.services.tree.remove(r.writer, target.node.record.id);
  await r.services.locks.removeWithin(r.userId, target.path.key);
  r.res.status(204).end();
}

/**
 * COPY and MOVE (RFC 4918 9.8, 9.9). MOVE is the API's move and rename ops on the same ids; COPY
 * makes new resources through the upload and folder-create paths. Overwrite: T replaces what is at
 * the destination (it goes to the trash first); F refuses with 412.
 */
export async function copyOrMove(r: DavRequest, move: boolean): Promise<void> {
  const source = await r.resolve();
  if (!source.node) throw new DavError(404, 'nothing at this path');
  if (source.node.kind === 'root') throw new DavError(403, 'the root collection cannot be copied or moved');
  const destinationPath = r.destination();
  if (isWithin(destinationPath.key, source.path.key)) throw new DavError(403, 'the destination is the source or inside it');
  const overwriteHeader = r.header('overwrite')?.trim().toUpperCase();
  if (overwriteHeader !== undefined && overwriteHeader !== 'T' && overwriteHeader !== 'F') throw new DavError(400, 'Overwrite must be T or F');
  const overwrite = overwriteHeader !== 'F';
  const depth = r.depth('infinity');
  if (depth === '1' || (move && depth !== 'infinity' && isCollection(source.node))) throw new DavError(400, 'Depth must be infinity (or 0 for a COPY)');

  const destination = await r.resolve(destinationPath);
  if (!destination.parent) throw new DavError(409, 'the destination\'s parent collection does not exist');
  const replaced = destination.node?.kind === 'resource' ? destination.node.record : undefined;
  if (destination.node && !overwrite) throw new DavError(412, 'the destination exists and Overwrite is F');
  await r.checkIf(source);
  if (move) await r.guard({ path: source.path.key, tree: true }, { path: parentOf(source.path).key });
  await r.guard({ path: destinationPath.key, tree: true }, { path: parentOf(destinationPath).key });

  const { tree, locks } = r.services;
  const parentId = folderIdOf(destination.parent);
  const name = destinationPath.segments[destinationPath.segments.length - 1]!;
  const record = source.node.record;
  if (move) {
    await tree.move(r.writer, record, parentId, name, replaced?.id);
    await locks.removeWithin(r.userId, source.path.key);
  } else {
    if (replaced) await tree.remove(r.writer, replaced.id);
    await copyTree(r, source.node, parentId, name, depth === 'infinity');
  }
  if (replaced) await locks.removeWithin(r.userId, destinationPath.key);
  r.res.status(replaced ? 204 : 201).end();
}

/** Copies a resource, and a collection's members when `deep`, one page of members at a time. */
async function copyTree(r: DavRequest, node: DavNode, parentId: string | null, name: string, deep: boolean): Promise<void> {
  if (node.kind === 'root') return;
  const { tree, dav } = r.services;
  const writer: Writer = r.writer;
  const record = node.record;
  if (record.type === 'file') {
    await tree.copyFile(writer, record, parentId, name);
    return;
  }
  const folderId = await tree.createFolder(writer, parentId, name);
  await dav.copyProperties(r.userId, record.id, folderId);
  if (!deep) return;
  let after: ResourceRecord | null = null;
  for (;;) {
    const page = await tree.members(r.userId, record.id, after, PAGE);
    for (const member of page) await copyTree(r, { kind: 'resource', record: member }, folderId, member.name, true);
    if (page.length < PAGE) break;
    after = page[page.length - 1]!;
  }
}
