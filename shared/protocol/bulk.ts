import type { ErrorBody, File } from './index';

/**
 * Many small files in one request or one response (docs/SYNC-CLIENT.md, "Many small files
 * together"). Both directions use one framing: per file, a 4-byte big-endian header length, that
 * many bytes of JSON header, then the file's bytes (`size` of them; none for an error); a header
 * length of 0 ends the body.
 */
export const BULK_MEDIA_TYPE = 'application/vnd.filesync.bulk';

/** At most this many files in one bulk request. */
export const BULK_MAX_FILES = 1000;

/** `POST /files/bulk`: one file to create (`name`, optional `id`, `folderId`) or whose content to replace (`fileId`). */
export interface BulkUploadHeader {
  size: number;
  name?: string;
  id?: string;
  folderId?: string;
  fileId?: string;
  /** Replacement only: the SHA-256 the file's content must still have. */
  ifMatch?: string;
  /** Replacement only: `*`, the file must have no content yet. */
  ifNoneMatch?: string;
  sha256?: string;
}

/** One file's outcome, in the order of the request: its File, or the error a single upload would have had. */
export type BulkUploadResult = { status: number; file: File } | { status: number; error: ErrorBody };

export interface BulkUploadResponse {
  results: BulkUploadResult[];
}

/** `POST /files/bulk/content`, JSON. */
export interface BulkDownloadRequest {
  ids: string[];
}

/** A file's header in a bulk download: its bytes follow, or it carries the error a single download would have had. */
export type BulkDownloadHeader = { id: string; size: number; sha256: string; rev: number } | { id: string; size: 0; error: ErrorBody };
