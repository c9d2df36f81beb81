import type { Request, RequestHandler, Response } from 'express';
import type { Knex } from 'knex';
import { LinkRepository } from '../../../shared/db/repositories/link.repository';
import { invalid } from '../../../shared/errors';
import type { StagedContent } from '../../../shared/storage/content.store';
import { discardRest } from '../content/content.routes';
import { fileMultipart } from '../files/file.multipart';
import type { FilesService } from '../files/files.service';
import { fileNameIsUtf8, fileTypeDeclared } from '../files/part.headers';
import type { UploadStaging } from '../uploads/upload.staging';

/** Longest name, in characters (code points), as every resource name (shared/names.ts). */
const MAX_NAME = 255;
/** Candidate names asked about per query while looking for a free one. */
const CANDIDATES_PER_QUERY = 32;

/** `a.txt` as `a` and `.txt`; a name without an extension, or a dot file (`.bashrc`), is all stem. */
function splitName(name: string): { stem: string; ext: string } {
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? { stem: name, ext: '' } : { stem: name.slice(0, dot), ext: name.slice(dot) };
}

/** `<stem> (n)<.ext>`, the stem shortened (by code points) when the whole would pass the name limit. */
export function numberedName(name: string, n: number): string {
  const { stem, ext } = splitName(name);
  const suffix = ` (${n})${ext}`;
  const room = MAX_NAME - [...suffix].length;
  const points = [...stem];
  return (points.length > room ? points.slice(0, Math.max(1, room)).join('') : stem) + suffix;
}

/**
 * The first of `name`, `<stem> (2)<.ext>`, `(3)`, ... that no active child of the folder holds. Run
 * in the upload's owner transaction, under the owner's lock, so two uploads of one name (on any
 * gateway) are decided one after the other and each gets its own.
 */
export function firstFreeName(userId: string) {
  return async (trx: Knex.Transaction, folderId: string | null, name: string): Promise<string> => {
    const links = new LinkRepository(trx);
    for (let from = 1; ; from += CANDIDATES_PER_QUERY) {
      const candidates = Array.from({ length: CANDIDATES_PER_QUERY }, (_, i) => (from + i === 1 ? name : numberedName(name, from + i)));
      const taken = await links.takenNames(userId, folderId ?? '', candidates);
      const free = candidates.find((c) => !taken.has(c));
      if (free !== undefined) return free;
    }
  };
}

export interface LinkUploadTarget {
  ownerId: string;
  deviceId: string;
  folderId: string;
}

/**
 * Receives the file of an upload link into the linked folder: the owner's quota (refused early from
 * Content-Length, as POST /files), MAX_UPLOAD_BYTES, and the owner's write path with the link's device.
 */
export class LinkUploads {
  private readonly multipart: RequestHandler;

  constructor(
    private readonly files: FilesService,
    private readonly storage: UploadStaging,
    maxUploadBytes: number,
  ) {
    this.multipart = fileMultipart(storage, maxUploadBytes);
  }

  /** Reads the body (after the early quota check); resolves with the staged file. */
  async receive(req: Request, res: Response, target: LinkUploadTarget): Promise<StagedContent & Express.Multer.File> {
    if (!req.is('multipart/form-data')) {
      discardRest(req);
      throw invalid('the upload must be multipart/form-data');
    }
    const length = Number(req.headers['content-length']);
    if (Number.isSafeInteger(length) && length > 0) {
      try {
        await this.files.checkDeclaredSize(target.ownerId, length);
      } catch (err) {
        discardRest(req);
        throw err;
      }
    }
    await new Promise<void>((resolve, reject) => this.multipart(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
    const file = req.file as (Express.Multer.File & StagedContent) | undefined;
    if (!file) throw invalid('exactly one file is expected, in the part named "file"');
    if (!fileNameIsUtf8(req)) {
      await this.storage.discard(file);
      throw invalid("the file part's headers (its file name) are not valid UTF-8");
    }
    return file;
  }

  async commit(req: Request, file: StagedContent & Express.Multer.File, target: LinkUploadTarget): Promise<{ name: string; size: number }> {
    const record = await this.files.upload({
      userId: target.ownerId,
      deviceId: target.deviceId,
      staged: file,
      declaredName: file.originalname,
      declaredType: fileTypeDeclared(req) === false ? undefined : file.mimetype,
      fields: { folderId: target.folderId },
      freeName: firstFreeName(target.ownerId),
    });
    return { name: record.name, size: record.sizeBytes };
  }
}
