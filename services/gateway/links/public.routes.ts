import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import { AppError, invalid } from '../../../shared/errors';
import type { LinkRepository } from '../../../shared/db/repositories/link.repository';
import type { ContentStore } from '../../../shared/storage/content.store';
import { clientAddress } from '../auth/rate.limits';
import { contentEtag, notModified, preconditionFails, sendContent, setContentHeaders } from '../content/content.download';
import type { FilesService } from '../files/files.service';
import { refuseDeepJson } from '../http/errors.middleware';
import { paging, queryString, singleParam } from '../http/request';
import { prepareArchive, walkFolder } from '../archive/zip.writer';
import type { LinkMetrics } from './link.metrics';
import type { LinkTransfers } from './link.transfers';
import type { LinkUploads } from './link.uploads';
import { toPublicItem, toPublicLinkView } from './links.presenter';
import type { LiveLink, PublicLinksService } from './public.service';

export interface PublicRouteDeps {
  links: PublicLinksService;
  linkRepo: LinkRepository;
  files: FilesService;
  store: ContentStore;
  transfers: LinkTransfers;
  uploads: LinkUploads;
  metrics: LinkMetrics;
}

/** What every public response carries, errors included: nothing cached, no Referer leaking the token onwards. */
export const publicHeaders: RequestHandler = (_req, res, next) => {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  next();
};

/** Content of a link is never a page of this origin: downloaded, not sniffed, and sandboxed if opened anyway. */
function setDownloadHeaders(res: Response): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
  res.setHeader('Cache-Control', 'no-store');
}

/**
 * True when this response will send the content from its first byte: a GET of all of it, or of a
 * range from 0, whose If-Match holds (a 412 sends nothing).
 */
function startsAtZero(req: Request, size: number, etag: string | undefined): boolean {
  if (req.method !== 'GET' || preconditionFails(req, etag)) return false;
  if (!/^ *bytes=/.test(req.headers.range ?? '')) return true;
  const ifRange = req.headers['if-range'];
  if (ifRange !== undefined && !(etag !== undefined && ifRange.includes(etag))) return true;
  const ranges = req.range(size, { combine: true });
  if (ranges === -1) return false;
  if (ranges === undefined || ranges === -2 || ranges.type !== 'bytes' || ranges.length !== 1) return true;
  return ranges[0]!.start === 0;
}

/** `/public/:token...`: what anyone holding a link's token may do (docs/LINKS.md). No Authorization needed. */
export function publicLinkRoutes(deps: PublicRouteDeps): Router {
  const { links, transfers } = deps;
  const router = Router();
  router.use('/public', publicHeaders);

  const live = (req: Request) => links.resolve(singleParam(req, 'token'));
  /** A live link whose password (if any) this request has unlocked, of the access the route needs. */
  const usable = async (req: Request, access: 'read' | 'upload'): Promise<LiveLink> => {
    const found = await live(req);
    links.requireUnlocked(req, found.link);
    if (found.link.access !== access) {
      throw new AppError('FORBIDDEN', access === 'read' ? 'an upload link lists and serves nothing' : 'this link does not accept uploads');
    }
    return found;
  };

  router.get('/public/:token', async (req, res) => {
    const found = await live(req);
    res.json(toPublicLinkView(found.link, found.resource));
  });

  router.post(
    '/public/:token/unlock',
    express.json({ limit: '1mb', strict: true, type: ['application/json', 'application/*+json'], verify: refuseDeepJson }),
    async (req, res) => {
      const found = await live(req);
      const body = req.body as { password?: unknown } | undefined;
      if (typeof body !== 'object' || body === null || typeof body.password !== 'string' || body.password.length === 0 || body.password.length > 1024) {
        throw invalid('password is required, as a string of at most 1024 characters', { field: 'password' });
      }
      const { access, expiresAt } = await links.unlock(found.link, body.password, clientAddress(req));
      res.json({ access, expiresAt: expiresAt.toISOString() });
    },
  );

  router.get('/public/:token/items', async (req, res) => {
    const found = await usable(req, 'read');
    if (found.resource.type !== 'folder') throw invalid('a link to a file has no items');
    const { limit, offset } = paging(req);
    const folder = await links.folder(found, queryString(req, 'folderId'));
    const page = await links.children(found, folder.id, limit, offset);
    res.json({ items: page.items.map(toPublicItem), total: page.total, limit, offset });
  });

  router.get('/public/:token/content', async (req, res) => {
    const found = await usable(req, 'read');
    const file = await links.file(found, queryString(req, 'fileId'));
    if (!file.storageKey) throw links.gone();
    await transfers.enter(found.link.userId, res);
    const opened = await deps.files.openContent(found.link.userId, file);
    try {
      setContentHeaders(res, opened.file);
      setDownloadHeaders(res);
      const etag = contentEtag(opened.file);
      if (notModified(req, etag)) {
        await opened.content.close();
        res.status(304).end();
        return;
      }
      if (startsAtZero(req, opened.content.size, etag)) {
        await links.countDownload(found.link);
        deps.metrics.download('content');
      }
      res.attachment(opened.file.name);
      res.type(opened.file.mimeType || 'application/octet-stream');
    } catch (err) {
      await opened.content.close();
      if (!res.headersSent) for (const header of ['Content-Type', 'Content-Disposition', 'ETag', 'Repr-Digest', 'Content-Security-Policy']) res.removeHeader(header);
      throw err;
    }
    try {
      await sendContent(req, res, opened.file, opened.content);
    } catch (err) {
      if (!res.headersSent) for (const header of ['Content-Type', 'Content-Disposition', 'ETag', 'Repr-Digest', 'Content-Security-Policy']) res.removeHeader(header);
      throw err;
    }
  });

  router.get('/public/:token/archive', async (req, res) => {
    const found = await usable(req, 'read');
    if (found.resource.type !== 'folder') throw invalid('a link to a file has no archive; download its content');
    const folder = await links.folder(found, queryString(req, 'folderId'));
    await transfers.enter(found.link.userId, res);
    // Its first files are listed and read while the download is counted; a link used up sends nothing.
    const archive = prepareArchive(deps.store, walkFolder(deps.linkRepo, found.link.userId, folder.id));
    const download = links.beginDownload(found.link);
    try {
      await download.ready;
    } catch (err) {
      archive.cancel();
      throw err;
    }
    deps.metrics.download('archive');
    res.attachment(`${folder.name}.zip`);
    res.type('application/zip');
    setDownloadHeaders(res);
    await archive.send(res, download.counted);
  });

  router.post('/public/:token/files', async (req, res) => {
    let found: LiveLink;
    try {
      found = await usable(req, 'upload');
    } catch (err) {
      // The body is not read: the connection closes after the answer instead of receiving it.
      res.setHeader('Connection', 'close');
      throw err;
    }
    await transfers.enter(found.link.userId, res);
    const target = { ownerId: found.link.userId, deviceId: found.link.deviceId, folderId: found.resource.id };
    const file = await deps.uploads.receive(req, res, target);
    const stored = await deps.uploads.commit(req, file, target);
    deps.metrics.uploaded(stored.size);
    res.status(201).json(stored);
  });

  return router;
}
