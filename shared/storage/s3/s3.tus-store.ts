import { createHash } from 'node:crypto';
import type http from 'node:http';
import { pipeline, Transform, type Readable } from 'node:stream';
import { pipeline as pipelineAsync } from 'node:stream/promises';
import { GetObjectCommand, PutObjectCommand, S3, type S3Client } from '@aws-sdk/client-s3';
import { S3Store } from '@tus/s3-store';
import { Upload } from '@tus/server';
import type { S3Config } from '../../config';
import type { ResumableDataStore, StagedContent, StoredObject, UploadGone } from '../content.store';
import { RunningHashes } from '../running.hashes';
import { s3ClientOptions } from './s3.client';
import type { MultipartUpload } from './s3.listing';

/** Resumable uploads live under this key prefix of the store (as on the local driver). */
export const TUS_PREFIX = '.tus/';

const UPLOAD_ID = /^[0-9a-f]{32}$/;

/** Parts of a resumable upload: every PATCH of at least this much becomes one part of its multipart upload. */
const PART_SIZE = 8 * 1024 * 1024;

/**
 * The library caches an upload's info per process; with several gateways another one may have
 * finished or removed the upload since, so every request reads the info from the bucket.
 */
const NO_CACHE = { get: async () => undefined, set: async () => undefined, delete: async () => undefined };

/**
 * Resumable uploads on S3 with @tus/s3-store: an upload is a multipart upload of the object
 * `.tus/<id>` plus its info `.tus/<id>.info` (and `.tus/<id>.part`, the tail of a PATCH smaller than
 * a part), all in the bucket, so any gateway continues an upload another one started, even after
 * that one died. Completed, its object is the staged content that `place` copies into place.
 *
 * What this adds to the library: every key under `<S3_PREFIX>.tus/` (an SDK middleware, since the
 * library has no prefix option); the running SHA-256 while PATCHes arrive in order on this gateway;
 * termination and expiry that abort the multipart upload and leave no object behind, even after a
 * crash between the steps; and no creation-defer-length (the service requires Upload-Length).
 */
/** What resumable uploads use of the content store's bucket (s3.store.ts provides it). */
export interface S3Bucket {
  readonly client: S3Client;
  readonly config: S3Config;
  readonly bucket: string;
  objectKey(key: string): string;
  deleteObject(objectKey: string): Promise<void>;
  list(prefix?: string): AsyncGenerator<StoredObject>;
  multipartUploads(prefix: string): AsyncGenerator<MultipartUpload>;
  abortMultipart(key: string, uploadId: string): Promise<void>;
}

export class S3TusStore extends S3Store implements ResumableDataStore {
  private readonly hashes = new RunningHashes();
  private readonly completed = new Map<string, Upload>();

  constructor(
    private readonly store: S3Bucket,
    expiryMs: number,
    private readonly gone?: UploadGone,
  ) {
    super({
      partSize: PART_SIZE,
      expirationPeriodInMilliseconds: expiryMs,
      useTags: false,
      cache: NO_CACHE,
      s3ClientConfig: { bucket: store.bucket, ...s3ClientOptions(store.config) },
    });
    this.extensions = ['creation', 'creation-with-upload', 'termination', 'expiration'];
    const namespace = store.objectKey(TUS_PREFIX);
    const client = (this as unknown as { client: S3 }).client;
    client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { Key?: unknown };
        if (typeof input.Key === 'string' && !input.Key.startsWith(namespace)) input.Key = namespace + input.Key;
        return next(args);
      },
      { step: 'initialize', name: 'tusKeyNamespace' },
    );
  }

  override async write(readable: http.IncomingMessage | Readable, id: string, offset: number): Promise<number> {
    const hash = this.hashes.take(id, offset);
    // A stage of the stream rather than a 'data' listener: the library reads the info and the parts
    // before it reads the body, and a listener would let the bytes flow away meanwhile.
    const hashed = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash?.update(chunk);
        done(null, chunk);
      },
    });
    pipeline(readable, hashed, () => undefined);
    let newOffset: number;
    try {
      newOffset = await super.write(hashed, id, offset);
    } catch (err) {
      if (!(await this.completedAt(id, offset, err))) throw err;
      // Its multipart upload was completed by a PATCH whose own completion then failed (the lock's
      // Redis went away, the gateway died): the library cannot write to it any more, and every
      // retried PATCH would fail. An empty PATCH at its size now reports it complete, so the
      // upload's completion runs again instead of the upload being stuck until it expires.
      hashed.resume();
      return offset;
    }
    if (hash) this.hashes.keep(id, hash, newOffset);
    return newOffset;
  }

  /** Whether `err` came from an upload whose multipart upload is already complete at `offset`, its size. */
  private async completedAt(id: string, offset: number, err: unknown): Promise<boolean> {
    const code = (err as { Code?: unknown; name?: unknown }).Code ?? (err as { name?: unknown }).name;
    if (code !== 'NoSuchUpload' && code !== 'NoSuchKey') return false;
    const upload = await super.getUpload(id).catch(() => undefined);
    return upload?.size !== undefined && upload.offset === upload.size && offset === upload.size;
  }

  /** See the local store: the library reads an upload completed by its creation once more. */
  holdCompleted(upload: Upload): () => void {
    this.completed.set(upload.id, new Upload({ ...upload, offset: upload.size ?? upload.offset }));
    return () => this.completed.delete(upload.id);
  }

  override async getUpload(id: string): Promise<Upload> {
    return this.completed.get(id) ?? super.getUpload(id);
  }

  async info(id: string): Promise<Upload | undefined> {
    if (!UPLOAD_ID.test(id)) return undefined;
    try {
      return (await this.getMetadata(id)).file;
    } catch {
      return undefined;
    }
  }

  /** The finished upload's object as staged content (an empty upload has no multipart upload to complete: written here). */
  async staged(id: string, size: number): Promise<StagedContent> {
    const key = `${TUS_PREFIX}${id}`;
    if (size === 0) {
      await this.store.client.send(new PutObjectCommand({ Bucket: this.store.bucket, Key: this.store.objectKey(key), Body: '', ContentLength: 0 }));
    }
    return { stagingKey: key, size, sha256: await this.digest(id, key, size) };
  }

  private async digest(id: string, key: string, size: number): Promise<string> {
    const running = this.hashes.finish(id, size);
    if (running) return running;
    const hash = createHash('sha256');
    const res = await this.store.client.send(new GetObjectCommand({ Bucket: this.store.bucket, Key: this.store.objectKey(key) }));
    await pipelineAsync(res.Body as Readable, hash);
    return hash.digest('hex');
  }

  /** Termination (and the end of a completion): aborts the multipart upload and deletes every object of the upload. */
  override async remove(id: string): Promise<void> {
    this.hashes.forget(id);
    const meta = await this.getMetadata(id).catch(() => undefined);
    const uploadId = meta?.['upload-id'];
    if (uploadId) await this.store.abortMultipart(`${TUS_PREFIX}${id}`, uploadId);
    for (const suffix of ['', '.part', '.info']) await this.store.deleteObject(this.store.objectKey(`${TUS_PREFIX}${id}${suffix}`));
    // Best effort, as on the local driver: what is not told here leaves the count when it expires.
    if (meta?.file) await this.gone?.(id, meta.file.metadata).catch(() => undefined);
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
   * Removes every upload created more than the expiry ago (its info's date), and what a crash left
   * as old as that: objects without info, multipart uploads without info. Returns how many uploads.
   */
  override async deleteExpired(): Promise<number> {
    const expiry = this.getExpiration();
    if (expiry <= 0) return 0;
    const before = Date.now() - expiry;
    const created = new Map<string, number>();
    const seen = new Map<string, number>();
    for await (const o of this.store.list(TUS_PREFIX)) {
      const name = o.key.slice(TUS_PREFIX.length);
      const id = name.replace(/\.(info|part)$/, '');
      if (!UPLOAD_ID.test(id)) continue;
      if (name.endsWith('.info')) created.set(id, o.modifiedAt.getTime());
      seen.set(id, Math.max(seen.get(id) ?? 0, o.modifiedAt.getTime()));
    }
    const doomed = new Set<string>();
    for (const [id, at] of seen) if ((created.get(id) ?? at) < before) doomed.add(id);
    const orphans: Array<{ key: string; uploadId: string }> = [];
    for await (const u of this.store.multipartUploads(TUS_PREFIX)) {
      const id = u.key.slice(TUS_PREFIX.length);
      if (!UPLOAD_ID.test(id)) continue;
      const at = created.get(id) ?? u.initiated.getTime();
      if (at >= before) continue;
      doomed.add(id);
      orphans.push(u);
    }
    for (const u of orphans) await this.store.abortMultipart(u.key, u.uploadId);
    for (const id of doomed) await this.remove(id);
    return doomed.size;
  }
}
