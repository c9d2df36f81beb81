import { Router, type NextFunction, type Request, type Response } from 'express';
import { invalid } from '../../../shared/errors';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { paging, queryString, singleParam } from '../http/request';
import { sha256FromHexField } from '../content/digest';
import type { StagedContent } from '../../../shared/storage/content.store';
import type { UploadStaging } from '../uploads/upload.staging';
import { toFileView, toFolderView } from './files.presenter';
import { optionalResourceId, type FileSortColumn, type FilesService } from './files.service';
import { fileMultipart } from './file.multipart';
import { fileNameIsUtf8, fileTypeDeclared } from './part.headers';
import { discardRest as refuseUnread } from '../content/content.routes';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const SORTS: Record<string, FileSortColumn> = {
  size: 'size_bytes',
  created_at: 'created_at',
  updated_at: 'updated_at',
  added_at: 'created_at',
};

export function fileRoutes(
  files: FilesService,
  storage: UploadStaging,
  maxUploadBytes: number,
  authenticated: ReturnType<typeof requireUser>,
): Router {
  const router = Router();
  const multipart = fileMultipart(storage, maxUploadBytes);

  const receiveUpload = (req: Request, res: Response, next: NextFunction) => {
    if (!req.is('multipart/form-data')) return next(invalid('the upload must be multipart/form-data'));
    const length = Number(req.headers['content-length']);
    // Refused before the body is read when its declared length already cannot fit in the quota.
    const declared = Number.isSafeInteger(length) && length > 0 ? files.checkDeclaredSize(principalOf(req).userId, length) : Promise.resolve();
    declared.then(
      () => multipart(req, res, next),
      (err: unknown) => {
        refuseUnread(req);
        next(err);
      },
    );
  };

  router.get('/files', authenticated, async (req, res) => {
    const { limit, offset } = paging(req);
    const folderId = optionalResourceId(queryString(req, 'folderId'), 'folderId');
    const sort = SORTS[queryString(req, 'sort') ?? ''] ?? 'created_at';
    const descending = queryString(req, 'order') !== 'asc';
    const page = await files.list(principalOf(req).userId, { folderId, sort, descending, limit, offset });
    res.json({ items: page.items.map(toFileView), total: page.total, limit, offset });
  });

  router.get('/files/search', authenticated, async (req, res) => {
    const q = queryString(req, 'q');
    if (!q) throw invalid('query parameter q is required');
    if ([...q].length > 255) throw invalid('q must be at most 255 characters');
    const { limit, offset } = paging(req);
    const page = await files.search(principalOf(req).userId, q, limit, offset);
    res.json({ items: page.items.map(toFileView), total: page.total, limit, offset });
  });

  router.get('/files/:id', authenticated, async (req, res) => {
    res.json(toFileView(await files.get(principalOf(req).userId, singleParam(req, 'id'))));
  });

  router.delete('/files/:id', authenticated, async (req, res) => {
    const id = singleParam(req, 'id');
    await files.delete(principalOf(req), id);
    res.json({ id });
  });

  router.post('/files', authenticated, receiveUpload, async (req, res) => {
    const file = req.file as (Express.Multer.File & StagedContent) | undefined;
    if (!file) throw invalid('exactly one file is expected, in the part named "file"');
    const principal = principalOf(req);
    const body = req.body as Record<string, unknown>;
    const field = (name: string): string | undefined => {
      const value = body[name];
      if (value === undefined) return undefined;
      if (typeof value !== 'string') throw invalid(`field ${name} must be given once`);
      try {
        return strictUtf8.decode(Buffer.from(value, 'latin1'));
      } catch {
        throw invalid(`field ${name} is not valid UTF-8`, { field: name });
      }
    };
    let fields;
    let expectedSha256;
    try {
      if (!fileNameIsUtf8(req)) throw invalid('the file part\'s headers (its file name) are not valid UTF-8');
      fields = { id: field('id'), folderId: field('folderId'), name: field('name') };
      expectedSha256 = sha256FromHexField(field('sha256'));
    } catch (err) {
      await storage.discard(file);
      throw err;
    }
    const record = await files.upload({
      userId: principal.userId,
      deviceId: principal.deviceId,
      staged: file,
      declaredName: file.originalname,
      // Busboy says text/plain for a part without Content-Type; the API treats that as missing.
      declaredType: fileTypeDeclared(req) === false ? undefined : file.mimetype,
      fields,
      expectedSha256,
    });
    res.status(201).json(toFileView(record));
  });

  router.get('/folders', authenticated, async (req, res) => {
    const parentId = optionalResourceId(queryString(req, 'parentId'), 'parentId');
    const folders = await files.listFolders(principalOf(req).userId, parentId);
    res.json({ items: folders.map(toFolderView) });
  });

  return router;
}
