import type { NextFunction, Request, RequestHandler, Response } from 'express';
import multer from 'multer';
import { AppError, invalid, tooLarge } from '../../../shared/errors';
import type { UploadStaging } from '../uploads/upload.staging';
import { feedNotingFileType } from './part.headers';

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
 * CPU per upload: docs/BENCHMARKS.md, "Uploads and `PUT`").
 */
const PARSER_BUFFER = 1024 * 1024;

/**
 * The parser of a multipart upload with one part `file`, staged in the content store as it arrives:
 * the owner's `POST /files` and share-link uploads alike. Errors reach `next` in the API's codes.
 */
export function fileMultipart(storage: UploadStaging, maxUploadBytes: number): RequestHandler {
  const options: multer.Options & { streamHandler: typeof feedNotingFileType; defCharset: string; highWaterMark: number; fileHwm: number } = {
    storage,
    // multer 2 passes these to busboy; @types/multer lacks them.
    highWaterMark: PARSER_BUFFER,
    fileHwm: PARSER_BUFFER,
    // File names in Content-Disposition are UTF-8 in every current client (checked in part.headers.ts).
    defParamCharset: 'utf8',
    // Text fields arrive as raw bytes (one char per byte) and are decoded strictly by the routes, so
    // that invalid UTF-8 is refused rather than turned into U+FFFD.
    defCharset: 'latin1',
    limits: { fileSize: maxUploadBytes, files: 1, fields: 10, fieldSize: 64 * 1024, parts: 12, headerPairs: 100 },
    // multer 2 options missing from @types/multer (defCharset too): tells whether the file part declared a type.
    streamHandler: feedNotingFileType,
  };
  const single = multer(options).single('file');
  return (req: Request, res: Response, next: NextFunction) => single(req, res, (err?: unknown) => next(err ? uploadError(err, maxUploadBytes) : undefined));
}
