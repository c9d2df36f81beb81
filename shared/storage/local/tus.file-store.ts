import { createHash } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FileStore } from '@tus/file-store';
import { ERRORS, Upload } from '@tus/server';
import type { ResumableDataStore, StagedContent, UploadGone } from '../content.store';
import { RunningHashes } from '../running.hashes';
import { FlushBehind, openFor, syncFile } from './durable';

/** Resumable uploads live under this key prefix of the local store: same file system, so completion is a rename. */
export const TUS_PREFIX = '.tus/';

/** Upload ids are ours (32 hex); anything else in the folder is not an upload's. */
const UPLOAD_ID = /^[0-9a-f]{32}$/;

const WRITE_BUFFER = 1024 * 1024;

/**
 * The tus file store (bytes in `<id>`, the upload's info in `<id>.json`, both on disk so they survive
 * a restart and can be shared by several gateways), with these changes:
 * - it hashes the bytes while PATCHes write them, as long as they arrive in order on this gateway,
 *   so completion need not read the file again, and writes them through a 1 MiB buffer, flushed
 *   behind the writes so that the flush at completion waits for the last stretch only;
 * - it does not advertise creation-defer-length: the service requires Upload-Length;
 * - its expiry sweep tolerates half-removed uploads (bytes without info or info without bytes).
 */
export class LocalTusStore extends FileStore implements ResumableDataStore {
  private readonly hashes = new RunningHashes();
  /** Uploads completed by their creation request, until it has answered (see `holdCompleted`). */
  private readonly completed = new Map<string, Upload>();

  /** `directory` is the local content store's folder for TUS_PREFIX; nothing else builds it. */
  constructor(
    directory: string,
    expiryMs: number,
    private readonly gone?: UploadGone,
  ) {
    super({ directory, expirationPeriodInMilliseconds: expiryMs });
    this.extensions = ['creation', 'creation-with-upload', 'termination', 'expiration'];
  }

  override async create(upload: Upload): Promise<Upload> {
    try {
      return await super.create(upload);
    } catch (err) {
      await this.gone?.(upload.id, upload.metadata).catch(() => undefined);
      throw err;
    }
  }

  /**
   * FileStore's write, with two changes: the file is written through a 1 MiB buffer, so chunks that
   * arrive while a write is under way go out together in one writev (as the staging of POST /files
   * does) instead of one 16 KiB write per network chunk; and the bytes are hashed as they pass.
   */
  override async write(readable: http.IncomingMessage | Readable, id: string, offset: number): Promise<number> {
    const handle = await openFor(readable, this.bytesPath(id), 'r+').catch(() => {
      throw ERRORS.FILE_WRITE_ERROR;
    });
    const hash = this.hashes.take(id, offset);
    let received = 0;
    // An observer rather than a stage of the pipeline: every chunk the stream emits is a chunk the
    // file stream is given, and nothing is added to the path of the bytes. Attached only with the
    // pipeline in the same turn: a 'data' listener alone would let the body flow past the file.
    readable.on('data', (chunk: Buffer) => {
      received += chunk.length;
      hash?.update(chunk);
    });
    try {
      await pipeline(readable, new FlushBehind(handle, offset), handle.createWriteStream({ start: offset, highWaterMark: WRITE_BUFFER }));
    } catch {
      throw ERRORS.FILE_WRITE_ERROR;
    }
    const newOffset = offset + received;
    if (hash) this.hashes.keep(id, hash, newOffset);
    return newOffset;
  }

  /**
   * After completing an upload inside its creation request (empty, or creation-with-upload), the
   * library reads the upload once more to decide on Upload-Expires; by then its bytes have moved.
   * Until `release` is called, reads of that upload see it finished instead of missing.
   */
  holdCompleted(upload: Upload): () => void {
    this.completed.set(upload.id, new Upload({ ...upload, offset: upload.size ?? upload.offset }));
    return () => this.completed.delete(upload.id);
  }

  override async getUpload(id: string): Promise<Upload> {
    return this.completed.get(id) ?? super.getUpload(id);
  }

  async info(id: string): Promise<Upload | undefined> {
    return this.configstore.get(id).catch(() => undefined);
  }

  /**
   * A finished upload as staged content of the local store, which `place` renames into place: its
   * bytes on disk first (durable.ts), before the owner's lock is taken.
   */
  async staged(id: string, size: number): Promise<StagedContent> {
    const [sha256] = await Promise.all([this.digest(id, size), syncFile(this.bytesPath(id))]);
    return { stagingKey: `${TUS_PREFIX}${id}`, size, sha256 };
  }

  /** The SHA-256 of a finished upload: from the running hash when it covers every byte, else read from disk. */
  private async digest(id: string, size: number): Promise<string> {
    const running = this.hashes.finish(id, size);
    if (running) return running;
    const hash = createHash('sha256');
    await pipeline(createReadStream(this.bytesPath(id)), hash);
    return hash.digest('hex');
  }

  private bytesPath(id: string): string {
    return path.join(this.directory, id);
  }

  /** Termination: removes the bytes and the info, whichever of them is still there. */
  override async remove(id: string): Promise<void> {
    this.hashes.forget(id);
    const info = this.gone ? await this.configstore.get(id).catch(() => undefined) : undefined;
    await Promise.all([fs.rm(this.bytesPath(id), { force: true }), fs.rm(path.join(this.directory, `${id}.json`), { force: true })]);
    // Best effort: what is not told here leaves the count when it would have expired.
    if (info) await this.gone?.(id, info.metadata).catch(() => undefined);
  }

  /**
   * Removes every upload created more than the expiry period ago (finished uploads never stay here:
   * completion moves them out), and leftovers of a crash as old as that: bytes without info, info
   * without bytes. Returns how many uploads were removed. Safe to run on several workers at once.
   */
  override async deleteExpired(): Promise<number> {
    const expiry = this.getExpiration();
    if (expiry <= 0) return 0;
    const now = Date.now();
    const names = await fs.readdir(this.directory).catch(() => [] as string[]);
    const ids = new Set(names.map((n) => n.replace(/\.json$/, '')).filter((id) => UPLOAD_ID.test(id)));
    let removed = 0;
    for (const id of ids) {
      const info = await this.configstore.get(id);
      let created = info?.creation_date ? Date.parse(info.creation_date) : NaN;
      if (Number.isNaN(created)) {
        const stat = await fs.stat(this.bytesPath(id)).catch(() => fs.stat(path.join(this.directory, `${id}.json`)).catch(() => undefined));
        if (!stat) continue;
        created = stat.mtimeMs;
      }
      if (now - created <= expiry) continue;
      await this.remove(id);
      removed++;
    }
    return removed;
  }
}

/**
 * The library creates the folder from its constructor, where a failure (a missing volume) would be
 * thrown from a callback and end the process; its `create` makes the folder anyway before the first
 * upload, and the expiry sweep treats a missing folder as empty. The method is private in its types.
 */
(LocalTusStore.prototype as unknown as { checkOrCreateDirectory: () => void }).checkOrCreateDirectory = () => undefined;
