import { closeSync, createReadStream, fstatSync, promises as fs, writeFile } from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { newId } from '../../ids';
import {
  ContentNotFoundError,
  STAGING_PREFIX,
  type ByteRange,
  type ContentHandle,
  type ContentStore,
  type ResumableDataStore,
  type StageOptions,
  type StagedContent,
  type StoredObject,
  type UploadGone,
} from '../content.store';
import type { BaseCopies, BaseCopyStaging } from '../base-copy';
import { HashMeter, measureBytes } from '../hash.meter';
import { closeFd, openFd, READ_CHUNK, READ_FS, readAt, writeDescriptor } from './buffer.pool';
import { isComposite, openComposite, readComposite, removeComposite, statComposite } from './composite';
import { CompositeStaging } from './composite.staging';
import { FlushBehind, FolderFlushes, openFor } from './durable';
import { claimMarker, readMarker } from './store.marker';
import { LocalTusStore, TUS_PREFIX } from './tus.file-store';
import { WholeReader } from './whole.reader';

/**
 * Folders that hold bytes no resource points at by design (resumable uploads in progress, and the
 * names other tus stores use): never walked.
 */
const NOT_CONTENT: readonly string[] = [TUS_PREFIX, '.uploads/', 'tus/'];

/**
 * Size of the writes to a staged file. Node's stock 16 KiB makes a write per network chunk; 1 MiB
 * lets the stream gather the chunks that arrive while a write is under way into one writev call
 * (the transfer bench measured about 15% more throughput). The chunks are not copied.
 */
const WRITE_BATCH = 1024 * 1024;

/**
 * A staged entry placed within this long of its last byte keeps that mtime: fsck's orphan age
 * (10 minutes by default, services/maintenance/fsck.ts) barely moves, and a utimes call per small upload is saved.
 */
const FRESH_STAGE_MS = 10_000;

/** A new file's bytes, on disk when it resolves, in one call of the callback API, which costs less than a FileHandle's. */
const writeWhole = (file: string, bytes: Buffer) => new Promise<void>((resolve, reject) => writeFile(file, bytes, { flag: 'wx', flush: true }, (err) => (err ? reject(err) : resolve())));

/** A key of plain segments (letters, digits, `_`, `-`, `.`; none `.` or `..`): it names a path below the root as it is. */
const PLAIN_KEY = path.sep === '/' ? /^(?!\.\.?(?:\/|$))[\w.-]+(?:\/(?!\.\.?(?:\/|$))[\w.-]+)*$/ : /(?!)/;
const isNotFound = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * A rename, the target's folder created only when the rename finds it missing (a device's folder
 * exists after its first file); on disk when it resolves (durable.ts), with the folder it created.
 */
async function renameInto(from: string, to: string, folders: FolderFlushes): Promise<void> {
  const dir = path.dirname(to);
  try {
    await fs.rename(from, to);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    const made = await fs.mkdir(dir, { recursive: true });
    await fs.rename(from, to);
    // Each folder made holds the next one: their parents' entries go to disk too.
    if (made) for (let d = dir; d !== path.dirname(made); d = path.dirname(d)) await folders.flush(path.dirname(d));
  }
  await folders.flush(dir);
}

/**
 * The content store on a local (or mounted) file system: each key is a file under UPLOAD_DIR. This
 * class is the only place that joins UPLOAD_DIR with a key, and it refuses any key that would leave it.
 * Staging and resumable uploads live in folders of the same file system, so `place` is a rename.
 */
export class LocalContentStore implements ContentStore, BaseCopies {
  readonly root: string;
  private tus: LocalTusStore | undefined;
  /** Whether this process has made (or found) the staging folder, which every upload's bytes enter. */
  private stagingMade = false;
  private readonly whole = new WholeReader();
  private readonly folders = new FolderFlushes();
  /** When this process finished staging each staged entry not yet placed or discarded. */
  private readonly stagedAt = new Map<string, number>();

  constructor(uploadDir: string) {
    this.root = path.resolve(uploadDir);
  }

  get location(): string {
    return this.root;
  }

  readonly resumable = {
    dataStore: (expiryMs: number, gone?: UploadGone): ResumableDataStore => {
      this.tus ??= new LocalTusStore(this.pathOf(TUS_PREFIX.slice(0, -1)), expiryMs, gone);
      return this.tus;
    },
  };

  /** Where a key's bytes are. Keys are the service's own; one that would leave the root is refused all the same. */
  private pathOf(key: string): string {
    // The service's keys (`<user>/<id>.bin`, `.staging/...`) are plain segments: joined as they are.
    if (PLAIN_KEY.test(key)) return `${this.root}${path.sep}${key}`;
    const full = path.resolve(this.root, key);
    if (!full.startsWith(this.root + path.sep)) throw new Error(`storage key outside the upload directory: ${key}`);
    return full;
  }

  /** A staging key's file: only under the staging folder or the resumable uploads' folder. */
  private stagedPath(stagingKey: string): string {
    if (!stagingKey.startsWith(STAGING_PREFIX) && !stagingKey.startsWith(TUS_PREFIX)) {
      throw new Error(`not a staging key: ${stagingKey}`);
    }
    return this.pathOf(stagingKey);
  }

  async stage(source: Readable, options: StageOptions): Promise<StagedContent> {
    const meter = new HashMeter(options.maxBytes);
    return this.stageWith(async (file) => {
      const handle = await openFor(source, file, 'wx');
      await pipeline(source, meter, new FlushBehind(handle), handle.createWriteStream({ highWaterMark: WRITE_BATCH, flush: true }));
      return { size: meter.received, sha256: meter.digest(), crc32: meter.crc32() };
    });
  }

  async stageBytes(bytes: Buffer, options: StageOptions): Promise<StagedContent> {
    const measured = measureBytes(bytes, options.maxBytes);
    return this.stageWith(async (file) => {
      await writeWhole(file, bytes);
      return measured;
    });
  }

  /** A new staging file written by `write`; on any failure it is removed. */
  private async stageWith(write: (file: string) => Promise<Omit<StagedContent, 'stagingKey'>>): Promise<StagedContent> {
    const stagingKey = `${STAGING_PREFIX}${newId()}.part`;
    const file = this.pathOf(stagingKey);
    try {
      if (!this.stagingMade) {
        await fs.mkdir(path.dirname(file), { recursive: true });
        this.stagingMade = true;
      }
      const staged = { stagingKey, ...(await write(file)) };
      this.stagedAt.set(stagingKey, Date.now());
      return staged;
    } catch (err) {
      // The staging folder removed under a running process: made again for the next upload.
      if (isNotFound(err)) this.stagingMade = false;
      await fs.rm(file, { force: true });
      throw err;
    }
  }

  /** Content made of ranges of the content of `baseKey` and new bytes, the long ranges linked rather than written (composite.staging.ts). */
  stageFromBase(baseKey: string, options: StageOptions): BaseCopyStaging {
    const stagingKey = `${STAGING_PREFIX}${newId()}.dir`;
    return new CompositeStaging({ stagingKey, dir: this.pathOf(stagingKey), baseKey, basePath: this.pathOf(baseKey), maxBytes: options.maxBytes, plain: (source) => this.stage(source, options) });
  }

  /** Runs inside the owner's transaction, with the owner's row locked: a rename (renameInto), rarely more. */
  async place(staged: StagedContent, key: string): Promise<void> {
    const from = this.stagedPath(staged.stagingKey);
    const to = this.pathOf(key);
    // A rename keeps the mtime of the last byte received, which for a resumable upload can be long
    // ago; fsck judges an orphan's age by it, so the bytes are dated now, before they reach the key.
    // Bytes this process staged moments ago already read as written about now: no call needed.
    const stagedAt = this.stagedAt.get(staged.stagingKey);
    this.stagedAt.delete(staged.stagingKey);
    if (stagedAt === undefined || Date.now() - stagedAt > FRESH_STAGE_MS) {
      const now = new Date();
      await fs.utimes(from, now, now);
    }
    // Staged bytes are on disk already (stageWith, CompositeStaging, LocalTusStore.staged).
    await renameInto(from, to, this.folders);
  }

  /** Written whole under a staging name, then renamed over the key: a reader never sees part of it. */
  async write(key: string, bytes: Buffer): Promise<void> {
    const file = this.pathOf(`${STAGING_PREFIX}${newId()}.part`);
    try {
      if (!this.stagingMade) await fs.mkdir(path.dirname(file), { recursive: true });
      this.stagingMade = true;
      await writeWhole(file, bytes);
      await renameInto(file, this.pathOf(key), this.folders);
    } catch (err) {
      if (isNotFound(err)) this.stagingMade = false;
      await fs.rm(file, { force: true });
      throw err;
    }
  }

  async discard(staged: StagedContent): Promise<void> {
    this.stagedAt.delete(staged.stagingKey);
    await fs.rm(this.stagedPath(staged.stagingKey), { force: true, recursive: staged.stagingKey.endsWith('.dir') });
  }

  async open(key: string): Promise<ContentHandle> {
    const fd = await openFd(this.pathOf(key)).catch((err: unknown) => {
      throw isNotFound(err) ? new ContentNotFoundError(key) : err;
    });
    try {
      // The size of a file just opened is in memory (its inode was read by the open): asked at once,
      // like the close above, rather than through the thread pool, which would add a hand-over to the
      // wait before the first byte.
      const stat = fstatSync(fd);
      if (stat.isDirectory()) {
        closeSync(fd);
        return await openComposite(this.pathOf(key), key);
      }
      if (!stat.isFile()) throw new ContentNotFoundError(key);
      return {
        size: stat.size,
        // The stream owns the descriptor from here and closes it when it ends, fails or is destroyed.
        read: async (range?: ByteRange) =>
          createReadStream('', { fd, fs: READ_FS, highWaterMark: READ_CHUNK, autoClose: true, ...(range ? { start: range.start, end: range.end } : {}) }),
        writeTo: async (dest: Writable, range?: ByteRange) => {
          try {
            await writeDescriptor(fd, dest, range?.start ?? 0, range ? range.end + 1 : stat.size, READ_CHUNK);
          } finally {
            closeSync(fd);
          }
        },
        readInto: (buf: Buffer, position: number) => readAt(fd, buf, 0, buf.length, position),
        // At once, as READ_FS closes: an archive closes a descriptor per file, and the pool's trip costs more than the call.
        close: async () => closeSync(fd),
      };
    } catch (err) {
      await closeFd(fd);
      throw err;
    }
  }

  async readWhole(items: { key: string; into: Buffer; crc32: boolean }[]): Promise<({ size: number; read: number; crc32?: number } | Error)[]> {
    const results = await this.whole.read(items.map(({ key, into, crc32 }) => ({ file: this.pathOf(key), into, crc32 })));
    if (results.every((r) => 'size' in r)) return results as { size: number; read: number; crc32?: number }[];
    return Promise.all(
      results.map(async (r, i) => {
        if ('size' in r) return r;
        // A composite (a delta's content) is read through its handle.
        if (r.code === 'EISDIR') return readComposite(this.pathOf(items[i]!.key), items[i]!.key, items[i]!.into, items[i]!.crc32).catch((err: Error) => err);
        return r.code === 'ENOENT' ? new ContentNotFoundError(items[i]!.key) : new Error(r.message);
      }),
    );
  }

  async stat(key: string): Promise<StoredObject | undefined> {
    try {
      const stat = await fs.stat(this.pathOf(key));
      if (stat.isDirectory()) return { key, ...(await statComposite(this.pathOf(key), key)) };
      if (!stat.isFile()) throw new Error(`not a file: ${key}`);
      return { key, size: stat.size, modifiedAt: stat.mtime };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async remove(key: string): Promise<void> {
    const file = this.pathOf(key);
    try {
      await fs.rm(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ERR_FS_EISDIR' || !(await isComposite(file))) throw err;
      await removeComposite(file, this.pathOf(`${STAGING_PREFIX}${newId()}.removed`));
    }
  }

  async *walk(prefix = ''): AsyncGenerator<StoredObject> {
    const entries = await fs.readdir(prefix ? this.pathOf(prefix) : this.root, { withFileTypes: true }).catch((err: unknown) => {
      if (isNotFound(err)) return [];
      throw err;
    });
    for (const entry of entries) {
      const key = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (NOT_CONTENT.some((p) => `${key}/`.startsWith(p))) continue;
        // A staging folder (a composite being made or removed) is one staging entry, dated by its folder.
        if (`${key}/`.startsWith(STAGING_PREFIX) && prefix !== '') {
          const stat = await fs.stat(this.pathOf(key)).catch(() => undefined);
          if (stat) yield { key, size: 0, modifiedAt: stat.mtime };
        } else if (prefix !== '' && (await isComposite(this.pathOf(key)))) {
          const stat = await this.stat(key).catch(() => undefined);
          if (stat) yield stat;
        } else {
          yield* this.walk(key);
        }
      } else if (entry.isFile() && prefix !== '') {
        // Content always sits in a folder (`<deviceId>/...`); a top-level file (the marker) is not content.
        const stat = await this.stat(key);
        if (stat) yield stat;
      }
    }
  }

  async sweepStaging(olderThanMs: number): Promise<number> {
    let removed = 0;
    for await (const entry of this.walk(STAGING_PREFIX.slice(0, -1))) {
      if (Date.now() - entry.modifiedAt.getTime() <= olderThanMs) continue;
      await fs.rm(this.stagedPath(entry.key), { force: true, recursive: true });
      removed++;
    }
    return removed;
  }

  async ping(): Promise<boolean> {
    return fs.stat(this.root).then(
      (s) => s.isDirectory(),
      () => false,
    );
  }

  readMarker(): Promise<string | undefined> {
    return readMarker(this.root);
  }

  claimMarker(storeId: string): Promise<string> {
    return claimMarker(this.root, storeId);
  }
}
