import { discardRest } from '../content/content.routes';
import { contentEtag, notModified, sendContent, setContentHeaders } from '../content/content.download';
import { DavError } from './dav.errors';
import { parentOf } from './dav.paths';
import type { DavRequest } from './dav.request';
import { folderIdOf, isCollection } from './dav.tree';

/** GET and HEAD of a file: its bytes with Range, ETag and Repr-Digest, exactly as the API's download. */
export async function getContent(r: DavRequest): Promise<void> {
  const target = await r.resolve();
  if (!target.node) throw new DavError(404, 'nothing at this path');
  if (target.node.kind === 'root' || isCollection(target.node)) {
    r.res.setHeader('Allow', 'OPTIONS, PROPFIND, PROPPATCH, MKCOL, DELETE, COPY, MOVE, LOCK, UNLOCK');
    throw new DavError(405, 'a collection has no content; list it with PROPFIND');
  }
  const { res, req } = r;
  const record = target.node.record;
  if (!record.storageKey) throw new DavError(404, 'this file has no content');
  setContentHeaders(res, record);
  if (notModified(req, contentEtag(record))) {
    res.status(304).end();
    return;
  }
  try {
    const opened = await r.services.tree.openContent(r.userId, record);
    // The content opened may be newer than the row read above (FilesService.openContent).
    setContentHeaders(res, opened.file);
    res.setHeader('Last-Modified', opened.file.updatedAt.toUTCString());
    res.type(opened.file.mimeType || 'application/octet-stream');
    await sendContent(req, res, opened.file, opened.content);
  } catch (err) {
    if (!res.headersSent) for (const name of ['Content-Type', 'ETag', 'Repr-Digest', 'Last-Modified']) res.removeHeader(name);
    throw err;
  }
}

/**
 * PUT: over a file, the API's content replacement (If-Match / If-None-Match on its ETag, a new rev,
 * the old content kept as the rules say); at a new path, the API's upload into the parent folder.
 * Refused before a byte is read: a missing parent (409), a collection (405), a declared size over
 * MAX_UPLOAD_BYTES (413), a lock or an If header that does not hold.
 */
export async function putContent(r: DavRequest): Promise<void> {
  const { req, res } = r;
  try {
    if (req.headers['content-range'] !== undefined) throw new DavError(400, 'a partial PUT (Content-Range) is not supported');
    const target = await r.resolve();
    if (target.node && isCollection(target.node)) throw new DavError(405, 'a collection cannot be written with PUT');
    if (!target.parent) throw new DavError(409, 'the parent collection does not exist');
    const { tree } = r.services;
    const length = req.headers['content-length'];
    if (length !== undefined && Number(length) > tree.maxUploadBytes) throw new DavError(413, `the content is larger than the upload limit (${tree.maxUploadBytes} bytes)`);
    await r.checkIf(target);
    const replaced = target.node?.kind === 'resource' ? target.node.record : undefined;
    const checkQuota = async () => {
      if (length !== undefined && Number.isSafeInteger(Number(length))) await tree.checkDeclaredSize(r.userId, Number(length), replaced);
    };
    const declaredType = req.headers['content-type'];
    if (target.node?.kind === 'resource') {
      await r.guard({ path: target.path.key });
      await checkQuota();
      const record = await tree.replaceFile(r.writer, target.node.record.id, req, declaredType, {
        ifMatch: r.header('if-match'),
        ifNoneMatch: r.header('if-none-match'),
      });
      res.setHeader('ETag', `"${record.contentSha256}"`);
      res.status(204).end();
      return;
    }
    if (r.header('if-match') !== undefined) throw new DavError(412, 'If-Match: nothing is at this path');
    await r.guard({ path: parentOf(target.path).key });
    await checkQuota();
    const name = target.path.segments[target.path.segments.length - 1]!;
    const record = await tree.createFile(r.writer, folderIdOf(target.parent), name, req, declaredType);
    res.setHeader('ETag', `"${record.contentSha256}"`);
    res.status(201).end();
  } catch (err) {
    if (!req.complete) discardRest(req);
    throw err;
  }
}
