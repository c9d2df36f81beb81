import { discardRest } from '../content/content.routes';
import { DavError } from './dav.errors';
import { parentOf } from './dav.paths';
import { etagOf } from './dav.props';
import type { DavRequest } from './dav.request';
import { folderIdOf, isCollection } from './dav.tree';

/** Reads of 1 MiB, as the API's content download does. */
const READ_CHUNK = 1024 * 1024;
const SEND_OPTIONS = { etag: false, lastModified: false, dotfiles: 'allow', acceptRanges: true, highWaterMark: READ_CHUNK } as const;

/** GET and HEAD of a file: its bytes with Range, ETag and Last-Modified, exactly those of the API. */
export async function getContent(r: DavRequest): Promise<void> {
  const target = await r.resolve();
  if (!target.node) throw new DavError(404, 'nothing at this path');
  if (isCollection(target.node) || target.node.kind === 'root') {
    r.res.setHeader('Allow', 'OPTIONS, PROPFIND, PROPPATCH, MKCOL, DELETE, COPY, MOVE, LOCK, UNLOCK');
    throw new DavError(405, 'a collection has no content; list it with PROPFIND');
  }
  const { file, absolutePath } = await r.services.tree.contentOf(r.userId, target.node.record.id);
  const { res } = r;
  const etag = etagOf(target.node);
  if (etag) res.setHeader('ETag', etag);
  res.setHeader('Last-Modified', file.updatedAt.toUTCString());
  res.setHeader('Cache-Control', 'private, no-cache');
  res.type(file.mimeType || 'application/octet-stream');
  await new Promise<void>((resolve, reject) => {
    res.sendFile(absolutePath, SEND_OPTIONS, (err) => {
      if (!err) return resolve();
      if (res.headersSent) {
        res.destroy();
        return resolve();
      }
      res.removeHeader('ETag');
      const { code, status } = err as { code?: string; status?: number };
      if (code === 'ENOENT') return reject(new DavError(404, 'this file has no content'));
      if (status === 416) return reject(new DavError(416, 'the requested range is not satisfiable'));
      reject(err);
    });
  });
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
    const declaredType = req.headers['content-type'];
    if (target.node?.kind === 'resource') {
      await r.guard({ path: target.path.key });
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
    const name = target.path.segments[target.path.segments.length - 1]!;
    const record = await tree.createFile(r.writer, folderIdOf(target.parent), name, req, declaredType);
    res.setHeader('ETag', `"${record.contentSha256}"`);
    res.status(201).end();
  } catch (err) {
    if (!req.complete) discardRest(req);
    throw err;
  }
}
