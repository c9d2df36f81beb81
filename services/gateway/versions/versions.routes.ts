import { Router, type Request } from 'express';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { paging, singleParam } from '../http/request';
import type { Version } from '../../../shared/protocol';
import { toFileView } from '../files/files.presenter';
import type { ContentStore } from '../../../shared/storage/content.store';
import { contentEtag, notModified, redirectToStore, sendContent, setContentHeaders } from '../content/content.download';
import type { ResourceRecord, VersionRecord, VersionsService } from './versions.service';

export function toVersionView(v: VersionRecord): Version {
  return {
    id: v.id,
    size: v.sizeBytes,
    sha256: v.contentSha256,
    mimeType: v.mimeType ?? '',
    createdAt: v.createdAt.toISOString(),
    replacedAt: v.replacedAt.toISOString(),
    deviceId: v.deviceId,
  };
}

/** The file as its version's content would show it: what the content headers and the download read. */
const asContent = (file: ResourceRecord, v: VersionRecord): ResourceRecord => ({
  ...file,
  storageKey: v.storageKey,
  sizeBytes: v.sizeBytes,
  contentSha256: v.contentSha256,
  mimeType: v.mimeType,
});

function header(req: Request, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** `/files/:id/versions...`: the version history of a file. */
export function versionRoutes(versions: VersionsService, store: ContentStore, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.get('/files/:id/versions', authenticated, async (req, res) => {
    const { limit, offset } = paging(req);
    const page = await versions.list(principalOf(req).userId, singleParam(req, 'id'), limit, offset);
    res.json({ items: page.items.map(toVersionView), total: page.total, limit, offset });
  });

  // Exactly like GET /files/:id/content: Range, ETag, Repr-Digest, If-None-Match, S3_DOWNLOADS.
  router.get('/files/:id/versions/:versionId/content', authenticated, async (req, res) => {
    const { file, version } = await versions.find(principalOf(req).userId, singleParam(req, 'id'), singleParam(req, 'versionId'));
    const content = asContent(file, version);
    setContentHeaders(res, content);
    if (notModified(req, contentEtag(content))) {
      res.status(304).end();
      return;
    }
    try {
      const opened = await versions.open(version);
      res.attachment(file.name);
      res.type(content.mimeType || 'application/octet-stream');
      if (await redirectToStore(req, res, store, version.storageKey, opened)) return;
      await sendContent(req, res, content, opened);
    } catch (err) {
      if (!res.headersSent) for (const name of ['Content-Type', 'Content-Disposition', 'ETag', 'Repr-Digest']) res.removeHeader(name);
      throw err;
    }
  });

  router.post('/files/:id/versions/:versionId/restore', authenticated, async (req, res) => {
    const { userId, deviceId } = principalOf(req);
    const conditions = { ifMatch: header(req, 'if-match'), ifNoneMatch: header(req, 'if-none-match') };
    const file = await versions.restore(userId, deviceId, singleParam(req, 'id'), singleParam(req, 'versionId'), conditions);
    res.json(toFileView(file));
  });

  router.delete('/files/:id/versions/:versionId', authenticated, async (req, res) => {
    await versions.delete(principalOf(req).userId, singleParam(req, 'id'), singleParam(req, 'versionId'));
    res.status(204).end();
  });

  return router;
}
