import { Router } from 'express';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { singleParam } from '../http/request';
import { toFileView } from '../files/files.presenter';
import { discardRest } from '../content/content.routes';
import { reprDigest, sha256FromDigestHeader } from '../content/digest';
import type { ChunkListsService } from './chunk-lists.service';
import type { DeltaService } from './delta.service';

const joined = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : v);

/**
 * `GET /files/:id/chunks` and `POST /files/:id/delta` (docs/SYNC-CLIENT.md, "Changes that move only
 * what changed"). Mounted ahead of the JSON body parser: a delta body is raw bytes.
 */
export function deltaRoutes(chunkLists: ChunkListsService, delta: DeltaService, authenticated: ReturnType<typeof requireUser>): Router {
  const router = Router();

  router.get('/files/:id/chunks', authenticated, async (req, res) => {
    const list = await chunkLists.of(principalOf(req).userId, singleParam(req, 'id'));
    res.setHeader('ETag', `"${list.sha256}"`);
    res.setHeader('Repr-Digest', reprDigest(list.sha256));
    res.setHeader('Cache-Control', 'private, no-cache');
    res.json(list);
  });

  router.post('/files/:id/delta', authenticated, async (req, res) => {
    const { userId, deviceId } = principalOf(req);
    try {
      const result = await delta.apply({
        userId,
        deviceId,
        fileId: singleParam(req, 'id'),
        body: req,
        ifMatch: joined(req.headers['if-match']),
        expectedSha256: sha256FromDigestHeader(joined(req.headers['repr-digest']), 'Repr-Digest'),
      });
      res.setHeader('ETag', `"${result.file.contentSha256}"`);
      res.setHeader('Filesync-Delta-Copied', String(result.copiedBytes));
      res.setHeader('Filesync-Delta-Literal', String(result.literalBytes));
      res.json(toFileView(result.file));
    } catch (err) {
      if (!req.complete) discardRest(req);
      throw err;
    }
  });

  return router;
}
