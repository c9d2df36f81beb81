import type { Readable, Writable } from 'node:stream';
import type { DataStore, Upload } from '@tus/server';

/**
 * Where file content lives, behind one interface with a driver per backend:
 * callers hand over keys and streams, never paths. A key is chosen by the service, never taken from
 * a client: `<deviceId>/<resourceId>[.<ext>]` for content (see shared/content/content.keys.ts), `.staging/<id>` for
 * bytes still being received. A driver maps keys to its medium (the local driver: files under
 * UPLOAD_DIR; an object store: `<S3_PREFIX><key>`) and refuses a key that would leave its root.
 *
 * The write protocol suits a medium with no rename and no partial write:
 * 1. `stage` streams the bytes under a staging key of the store's choosing, hashing and counting them;
 * 2. inside the owner's transaction, after the row names the new key, `place` makes the staged bytes
 *    the content of that key (a rename on disk; a copy, or the completion of a multipart upload, on
 *    an object store). Content keys are never reused, so a reader of the old key is never disturbed;
 * 3. after the commit, the replaced key is `remove`d; if the commit failed, the placed key is.
 * What a crash leaves between the steps is found by `walk` (fsck) and the staging sweep.
 */
export interface ContentStore {
  /** Streams `source` to a new staging key; over `maxBytes` fails with FILE_TOO_LARGE and leaves nothing. */
  stage(source: Readable, options: StageOptions): Promise<StagedContent>;
  /**
   * As `stage`, for bytes already in memory (the small files of a bulk upload): one write, no
   * stream. Optional: without it, callers stage the bytes as a stream.
   */
  stageBytes?(bytes: Buffer, options: StageOptions): Promise<StagedContent>;
  /**
   * Makes staged bytes the content of `key`, which must not exist yet; the staged entry is consumed.
   * The content reads as written now (its `modifiedAt`), so fsck judges its age from its placing,
   * not from when its bytes were received.
   */
  place(staged: StagedContent, key: string): Promise<void>;
  /**
   * Writes small bytes the service made itself (thumbnails) under `key` in one step, replacing
   * whatever the key held; a reader sees the old bytes or the new, whole. Unlike `stage` + `place`
   * nothing is hashed or counted: the caller made the bytes and names their key itself.
   */
  write(key: string, bytes: Buffer): Promise<void>;
  /** Drops a staged entry that will not be placed; nothing happens when it is gone already. */
  discard(staged: StagedContent): Promise<void>;
  /**
   * Opens the content of `key` for reading; ContentNotFoundError when there is none. Once open, the
   * handle reads the bytes the key held at that moment, whole, even if the key is removed meanwhile
   * (the local driver holds the file open; an object-store driver pins the object's version or ETag).
   */
  open(key: string): Promise<ContentHandle>;
  /**
   * Where the store hands whole-content downloads to the client itself (S3 with
   * S3_DOWNLOADS=redirect): a URL, valid a few minutes, that reads the content of `key` with these
   * response headers. Undefined when downloads go through the gateway (the local driver, S3 with
   * S3_DOWNLOADS=proxy). The caller has checked that `key` exists (it opened it).
   */
  downloadUrl?(key: string, headers: DownloadHeaders): Promise<string | undefined>;
  /**
   * Where the driver has it: reads several small contents whole in one trip off the event loop, each
   * into `into` (a view of shared memory, as long as the content should be). Per key, in order: the
   * content's size, how many of its bytes landed and, when `crc32` asks, their CRC-32 (taken where
   * they were read), or ContentNotFoundError or the read's failure.
   */
  readWhole?(items: { key: string; into: Buffer; crc32: boolean }[]): Promise<({ size: number; read: number; crc32?: number } | Error)[]>;
  /** Size and age of the content of `key`; undefined only when it does not exist (other failures throw). */
  stat(key: string): Promise<StoredObject | undefined>;
  /** Removes the content of `key`; nothing happens when it is gone already. */
  remove(key: string): Promise<void>;
  /**
   * Every object of the store except the marker and resumable uploads in progress: content keys and
   * staging keys (`isStagingKey`), in no particular order.
   */
  walk(): AsyncIterable<StoredObject>;
  /** Removes staging entries older than `olderThanMs` (left by a crash); returns how many. */
  sweepStaging(olderThanMs: number): Promise<number>;
  /** The id of the database this store belongs to, from its marker; undefined when it has none. */
  readMarker(): Promise<string | undefined>;
  /**
   * Writes the marker with `storeId` unless one is there already (atomically: of two writers, one
   * wins); returns the id the marker holds afterwards.
   */
  claimMarker(storeId: string): Promise<string>;
  /** Resumable (tus) uploads kept by this store, so any gateway on it can continue them. */
  readonly resumable: ResumableUploads;
  /** Whether the store answers now (the folder is there; the bucket answers a listing), for /readyz. */
  ping(): Promise<boolean>;
  /** A description for operators' messages (the folder, or the bucket and prefix); never a secret. */
  readonly location: string;
}

export interface StageOptions {
  maxBytes: number;
}

/** Bytes received and hashed under a staging key; `place` or `discard` ends its life. */
export interface StagedContent {
  /** The staging key (`.staging/...` or a resumable upload's own key); only its store interprets it. */
  readonly stagingKey: string;
  readonly size: number;
  /** SHA-256 of the bytes, hex. */
  readonly sha256: string;
  /** CRC-32 of the bytes, when the staging saw every one of them (not when parts were copied inside the store). */
  readonly crc32?: number;
}

export interface StoredObject {
  key: string;
  size: number;
  modifiedAt: Date;
}

/** Inclusive byte positions, as in an HTTP Range. */
export interface ByteRange {
  start: number;
  end: number;
}

/** Open content: its size, read once, whole or in part. */
export interface ContentHandle {
  readonly size: number;
  /**
   * A stream of the bytes in `range` (all when absent); the handle is released when it ends or fails.
   * Resolves once the bytes can flow (an object store has answered), so the medium's own stream is
   * handed over, with no stage between it and the reader.
   */
  read(range?: ByteRange): Promise<Readable>;
  /**
   * Where the driver has it, in place of `read`: writes the bytes in `range` (all when absent) into
   * `dest` itself, so that it can reuse its buffers once each write is done. Resolves once all were
   * written, or early when `dest` is destroyed; rejects on a read failure. Never ends `dest`; the
   * handle is released either way.
   */
  writeTo?(dest: Writable, range?: ByteRange): Promise<void>;
  /**
   * Where the driver has it, in place of `read`: copies bytes from `position` into `buf` and resolves
   * with their count (up to `buf.length`; 0 past the end), so the caller can reuse its buffers from
   * content to content. The handle stays open until `close`.
   */
  readInto?(buf: Buffer, position: number): Promise<number>;
  /** Releases a handle that will not be read. */
  close(): Promise<void>;
}

/** The response headers a download URL makes the store send, exactly as the gateway would. */
export interface DownloadHeaders {
  contentDisposition: string;
  contentType: string;
}

/**
 * The store's side of resumable uploads: the tus datastore that keeps them in this store (one per
 * process), so that any gateway on the same store can continue an upload.
 */
export interface ResumableUploads {
  /** `gone` is told when an upload leaves the store (finished, terminated) or its creation failed. */
  dataStore(expiryMs: number, gone?: UploadGone): ResumableDataStore;
}

/** Told when an upload leaves the store (finished, terminated) or its creation failed, with its metadata. */
export type UploadGone = (id: string, metadata: Upload['metadata']) => Promise<void>;

/** A tus datastore, plus what the gateway and the workers need of it beyond the library's interface. */
export interface ResumableDataStore extends DataStore {
  /** The upload's stored info (metadata, creation date); undefined when there is no such upload. */
  info(uploadId: string): Promise<Upload | undefined>;
  /** The finished upload's bytes as staged content (hashed from the stored bytes when needed), for `place`. */
  staged(uploadId: string, size: number): Promise<StagedContent>;
  /**
   * After an upload completed inside its creation request, the library reads it once more; by then
   * its bytes have been placed. Until the returned function is called it reads as finished.
   */
  holdCompleted(upload: Upload): () => void;
  /** Removes an upload's bytes and info, whichever are still there. */
  remove(uploadId: string): Promise<void>;
  /** Removes uploads older than the expiry, and leftovers of a crash; returns how many. */
  deleteExpired(): Promise<number>;
}

export class ContentNotFoundError extends Error {
  readonly code = 'ENOENT';
  constructor(readonly key: string) {
    super(`no content under ${key}`);
  }
}

export const STAGING_PREFIX = '.staging/';

export const isStagingKey = (key: string): boolean => key.startsWith(STAGING_PREFIX);
