import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CODES, type ErrorCode, type File } from '../../../shared/protocol';
import type { BulkUploadHeader } from '../../../shared/protocol/bulk';
import { bulkDownload, bulkUpload } from '../sdk/bulk';
import { AbortedError, ApiError } from '../sdk/errors';
import { STATE_DIR } from './journal';
import { assertSafeId } from './local.names';
import { newId } from './match';
import type { Session } from './session';

/** Files up to this size travel many to a request (docs/SYNC-CLIENT.md, "Many small files together"). */
export const BULK_FILE_MAX = 256 * 1024;
/** Bulk transfers pay off for many files at once; a few go one by one, each on its own request. */
export const BULK_MIN_FILES = 16;
const BATCH_FILES = 250;
const BATCH_BYTES = 8 * 1024 * 1024;

/** Groups of at most BATCH_FILES items and about BATCH_BYTES, in order; none for fewer than BULK_MIN_FILES items. */
export function batches<T>(items: T[], size: (item: T) => number): T[][] {
  const out: T[][] = [];
  if (items.length < BULK_MIN_FILES) return out;
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    if (current.length && (current.length >= BATCH_FILES || bytes + size(item) > BATCH_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size(item);
  }
  if (current.length) out.push(current);
  return out;
}

/** What one file of a bulk download became: a temporary file to check and place, or the error its single download would have had. */
export type BulkDownloaded = { tmp: string; sha256: string; expected: string; modeSet: true } | ApiError;

/**
 * Bulk uploads and downloads of small files. Each answers undefined when the request as a whole
 * failed (a service without the endpoints, a connection cut): the caller then moves those files one
 * by one, which settles each file's fate as before.
 */
export class BulkTransfers {
  private supported = true;

  constructor(
    private readonly dir: string,
    private readonly session: Session,
    private readonly signal: AbortSignal,
  ) {}

  async upload(items: { diskPath: string; header: Omit<BulkUploadHeader, 'size'> }[]): Promise<(File | ApiError)[] | undefined> {
    if (!this.supported) return undefined;
    try {
      const files = await Promise.all(items.map(async (i) => ({ header: i.header, content: await fs.readFile(join(this.dir, i.diskPath)) })));
      const res = await this.session.authed(() => bulkUpload(this.session.client, files, this.signal));
      return res.results.map((r) => ('file' in r ? r.file : new ApiError(r.status, r.error)));
    } catch (err) {
      return this.fallBack(err);
    }
  }

  async download(nodes: { id: string; sha256: string }[]): Promise<Map<string, BulkDownloaded> | undefined> {
    if (!this.supported) return undefined;
    const got = new Map<string, BulkDownloaded>();
    try {
      for (const n of nodes) assertSafeId(n.id);
      await this.session.authed(async () => {
        for await (const { header, bytes } of bulkDownload(this.session.client, nodes.map((n) => n.id), this.signal)) {
          if ('error' in header) {
            got.set(header.id, new ApiError(ERROR_CODES[header.error.code as ErrorCode] ?? 400, header.error));
            continue;
          }
          const tmp = join(this.dir, STATE_DIR, 'tmp', `${header.id}-${newId().slice(0, 8)}`);
          // Made with the mode of any file created in DIR (the umask's), in the state folder only its owner can enter.
          await fs.writeFile(tmp, bytes, { mode: 0o666, flag: 'wx' });
          got.set(header.id, { tmp, sha256: createHash('sha256').update(bytes).digest('hex'), expected: header.sha256, modeSet: true });
        }
      });
      return got;
    } catch (err) {
      for (const g of got.values()) if (!(g instanceof ApiError)) await fs.rm(g.tmp, { force: true });
      return this.fallBack(err);
    }
  }

  private fallBack(err: unknown): undefined {
    if (err instanceof AbortedError || this.signal.aborted) throw err;
    // A service without bulk endpoints answers 404 (an unknown route) or 405: stop asking it.
    if (err instanceof ApiError && (err.status === 404 || err.status === 405)) this.supported = false;
    return undefined;
  }
}
