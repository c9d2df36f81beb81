import { Router, type NextFunction, type Request, type Response } from 'express';
import multer from 'multer';
import { AppError, invalid, tooLarge } from '../../../shared/errors';
import { principalOf, type requireUser } from '../auth/auth.middleware';
import { paging, queryString, singleParam } from '../http/request';
import { sha256FromHexField } from '../content/digest';
import type { StagedContent } from '../../../shared/storage/content.store';
import type { UploadStaging } from '../uploads/upload.staging';
import { toFileView, toFolderView } from './files.presenter';
import { optionalResourceId, type FileSortColumn, type FilesService } from './files.service';
import { feedNotingFileType, fileNameIsUtf8, fileTypeDeclared } from './part.headers';
import { discardRest as refuseUnread } from '../content/content.routes';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const SORTS: Record<string, FileSortColumn> = {
  size: 'size_bytes',
  created_at: 'created_at',
  updated_at: 'updated_at',
  added_at: 'created_at',
};

/** Multer failures in the API's error codes; the storage engine has already removed partial files. */
export function uploadError(err: unknown, maxUploadBytes: number): AppError {
  if (err instanceof multer.MulterError) {
    if (err.code === 'LIMIT_FILE_SIZE') return tooLarge(maxUploadBytes);
    if (err.code === 'LIMIT_FILE_COUNT' || err.code === 'LIMIT_UNEXPECTED_FILE') {
      return invalid('exactly one file is expected, in the part named "file"');
    }
    return invalid(`malformed upload: ${err.message}`);
  }
  if (err instanceof AppError) return err;
  return invalid('malformed multipart body');
}

/**
 * Buffers of busboy's parser and of the file stream it feeds. The stock 16 KiB is less than one socket
 * read (64 KiB), so every read paused the request until the staging writer caught up; with 1 MiB the
 * socket keeps flowing while the hash and the disk write run, as on the PUT path (a few percent less
 * CPU per upload: docs/BENCHMARKS.md, "Multipart beside PUT").
 */
const PARSER_BUFFER = 1024 * 1024;

export function fileRoutes(
  files: FilesService,
  storage: UploadStaging,
  maxUploadBytes: number,
  authenticated: ReturnType<typeof requireUser>,
): Router {
  const router = Router();
  const options: multer.Options & { streamHandler: typeof feedNotingFileType; defCharset: string; highWaterMark: number; fileHwm: number } = {
    storage,
    // multer 2 passes these to busboy; @types/multer lacks them.
    highWaterMark: PARSER_BUFFER,
    fileHwm: PARSER_BUFFER,
    // File names in Content-Disposition are UTF-8 in every current client (checked in part.headers.ts).
    defParamCharset: 'utf8',
    // Text fields arrive as raw bytes (one char per byte) and are decoded strictly below, so that
    // invalid UTF-8 is refused rather than turned into U+FFFD.
    defCharset: 'latin1',
    limits: { fileSize: maxUploadBytes, files: 1, fields: 10, fieldSize: 64 * 1024, parts: 12, headerPairs: 100 },
    // multer 2 options missing from @types/multer (defCharset too): tells whether the file part declared a type.
    streamHandler: feedNotingFileType,
  };
  const multipart = multer(options).single('file');

  const receiveUpload = (req: Request, res: Response, next: NextFunction) => {
    if (!req.is('multipart/form-data')) return next(invalid('the upload must be multipart/form-data'));
    const length = Number(req.headers['content-length']);
    // Refused before the body is read when its declared length already cannot fit in the quota.
    const declared = Number.isSafeInteger(length) && length > 0 ? files.checkDeclaredSize(principalOf(req).userId, length) : Promise.resolve();
    declared.then(
      () => multipart(req, res, (err?: unknown) => next(err ? uploadError(err, maxUploadBytes) : undefined)),
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
