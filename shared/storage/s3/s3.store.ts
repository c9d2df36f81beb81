import { pipeline, Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { S3Config } from '../../config';
import { newId } from '../../ids';
import {
  STAGING_PREFIX,
  type ContentHandle,
  type ContentStore,
  type DownloadHeaders,
  type ResumableDataStore,
  type StageOptions,
  type StagedContent,
  type StoredObject,
  type UploadGone,
} from '../content.store';
import type { BaseCopies, BaseCopyStaging } from '../base-copy';
import { HashMeter } from '../hash.meter';
import { S3BaseCopyStaging } from './s3.base-copy';
import { createS3Client, isNotFound, statusOf } from './s3.client';
import { listMultipartUploads, listObjects, type MultipartUpload } from './s3.listing';
import { S3DownloadLinks } from './s3.download-links';
import { putStreamed } from './s3.multipart';
import { S3Reads } from './s3.reads';
import { HELD_IN_MEMORY, readUpTo } from './s3.staging';
import { S3TusStore, TUS_PREFIX } from './s3.tus-store';

/** The marker object, beside the content under the prefix (the local driver's marker file). */
export const MARKER_KEY = '.filesync-store';

/**
 * Streamed uploads go out in parts of this size, a few at once: a content smaller than one part is
 * one PutObject, a larger one a multipart upload. At most PART_SIZE x (PARTS_IN_FLIGHT + 1) bytes of
 * an upload are in memory (the parts being sent and the one being gathered), whatever its size.
 */
export const PART_SIZE = 16 * 1024 * 1024;
export const PARTS_IN_FLIGHT = 3;

/** CopyObject copies at most 5 GiB in one request. */
const MAX_SINGLE_COPY = 5 * 1024 ** 3;

/**
 * The content store on an S3-compatible bucket: the key `k` is the object `<S3_PREFIX>k`. Nothing
 * touches the local disk. An object store has no rename: `stage` streams the bytes (hashed on the way)
 * to `.staging/<id>`, `place` copies them server-side to the content key and deletes the staging
 * object, and what a crash leaves under `.staging/` (objects and multipart uploads) is swept. Content
 * of at most HELD_IN_MEMORY bytes skips the staging object: held in memory, put once by `place`.
 */
export class S3ContentStore implements ContentStore, BaseCopies {
  readonly client: S3Client;
  private tus: S3TusStore | undefined;
  /** Staged content small enough to be held in memory until it is placed or discarded (s3.staging.ts). */
  private readonly held = new Map<string, Buffer>();
  /** HEADs, cached, and GETs pinned to an ETag (s3.reads.ts). */
  private readonly reads: S3Reads;
  /** Presigned GETs, with S3_DOWNLOADS=redirect (s3.download-links.ts). */
  private readonly links: S3DownloadLinks | undefined;

  constructor(readonly config: S3Config) {
    this.client = createS3Client(config);
    this.reads = new S3Reads(this.client, config.bucket);
    this.links = config.downloads === 'redirect' ? new S3DownloadLinks(config) : undefined;
  }

  get location(): string {
    return `s3://${this.config.bucket}/${this.config.prefix}`;
  }

  get bucket(): string {
    return this.config.bucket;
  }

  readonly resumable = {
    dataStore: (expiryMs: number, gone?: UploadGone): ResumableDataStore => {
      this.tus ??= new S3TusStore(this, expiryMs, gone);
      return this.tus;
    },
  };

  /** The object key of a store key: under the prefix, never anywhere else. */
  objectKey(key: string): string {
    if (key === '' || key.startsWith('/') || key.split('/').some((part) => part === '..' || part === '.')) {
      throw new Error(`storage key outside the store: ${key}`);
    }
    return this.config.prefix + key;
  }

  private stagingObject(stagingKey: string): string {
    if (!stagingKey.startsWith(STAGING_PREFIX) && !stagingKey.startsWith(TUS_PREFIX)) throw new Error(`not a staging key: ${stagingKey}`);
    return this.objectKey(stagingKey);
  }

  async stage(source: Readable, options: StageOptions): Promise<StagedContent> {
    const stagingKey = `${STAGING_PREFIX}${newId()}.part`;
    const meter = new HashMeter(options.maxBytes);
    // The source's failure (a client gone, a limit) fails the meter, and so the read or the upload,
    // which then aborts its multipart upload.
    pipeline(source, meter, () => undefined);
    let writing = false;
    try {
      const read = await readUpTo(meter, HELD_IN_MEMORY);
      if ('whole' in read) {
        this.held.set(stagingKey, read.whole);
        return { stagingKey, size: meter.received, sha256: meter.digest(), crc32: meter.crc32() };
      }
      writing = true;
      // Leaving the iteration early (a failed part) ends the reading of the meter.
      await putStreamed({ client: this.client, bucket: this.bucket, key: this.objectKey(stagingKey), partSize: PART_SIZE, partsInFlight: PARTS_IN_FLIGHT }, read.rest);
      return { stagingKey, size: meter.received, sha256: meter.digest(), crc32: meter.crc32() };
    } catch (err) {
      meter.destroy();
      // A PutObject or a completion that reached the bucket before the failure was seen is removed.
      if (writing) await this.deleteObject(this.objectKey(stagingKey)).catch(() => undefined);
      // The meter's own error (FILE_TOO_LARGE, the client's) says more than the SDK's.
      throw meter.errored ?? source.errored ?? err;
    }
  }

  async place(staged: StagedContent, key: string): Promise<void> {
    const held = this.held.get(staged.stagingKey);
    if (held) {
      // Held in memory since `stage`: written under its content key in one request.
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key), Body: held, ContentLength: held.length }));
      this.held.delete(staged.stagingKey);
      return;
    }
    const from = this.stagingObject(staged.stagingKey);
    if (staged.size > MAX_SINGLE_COPY) throw new Error('content over 5 GiB cannot be placed on S3 in one copy');
    await this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key), CopySource: this.copySource(from), MetadataDirective: 'REPLACE' }));
    await this.deleteObject(from);
  }

  /** One PutObject: S3 replaces an object whole. The HEAD known of the key is dropped, since the key is written again. */
  async write(key: string, bytes: Buffer): Promise<void> {
    const objectKey = this.objectKey(key);
    this.reads.forget(objectKey);
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: objectKey, Body: bytes, ContentLength: bytes.length }));
  }

  /** Content made of ranges of the content of `baseKey` and new bytes, the long ranges copied in the bucket (s3.base-copy.ts). */
  stageFromBase(baseKey: string, options: StageOptions): BaseCopyStaging {
    const base = this.objectKey(baseKey);
    const stagingKey = `${STAGING_PREFIX}${newId()}.part`;
    return new S3BaseCopyStaging({
      client: this.client,
      bucket: this.bucket,
      stagingKey,
      objectKey: this.objectKey(stagingKey),
      baseKey,
      copySource: this.copySource(base),
      baseEtag: async () => (await this.reads.known(base))?.etag,
      partSize: PART_SIZE,
      partsInFlight: PARTS_IN_FLIGHT,
      maxBytes: options.maxBytes,
    });
  }

  /** CopySource of an object of the bucket: `bucket/key`, the key URL-encoded but for its slashes. */
  private copySource(objectKey: string): string {
    return `${this.bucket}/${encodeURIComponent(objectKey).replace(/%2F/g, '/')}`;
  }

  async discard(staged: StagedContent): Promise<void> {
    if (this.held.delete(staged.stagingKey)) return;
    await this.deleteObject(this.stagingObject(staged.stagingKey));
  }

  open(key: string): Promise<ContentHandle> {
    return this.reads.open(this.objectKey(key), key);
  }

  async downloadUrl(key: string, headers: DownloadHeaders): Promise<string | undefined> {
    return this.links?.url(this.objectKey(key), headers);
  }

  async stat(key: string): Promise<StoredObject | undefined> {
    const head = await this.reads.head(this.objectKey(key));
    return head && { key, size: head.size, modifiedAt: head.modifiedAt };
  }

  async remove(key: string): Promise<void> {
    await this.deleteObject(this.objectKey(key));
  }

  /** @internal Deletes an object by its full key; a missing one is not an error (S3 says 204 either way). */
  async deleteObject(objectKey: string): Promise<void> {
    this.reads.forget(objectKey);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: objectKey }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** @internal Every object under `prefix` (a store key prefix), as store keys, page by page. */
  list(prefix = ''): AsyncGenerator<StoredObject> {
    return listObjects(this.client, this.bucket, this.config.prefix, prefix);
  }

  /** @internal Multipart uploads in progress under `prefix` (a store key prefix). */
  multipartUploads(prefix: string): AsyncGenerator<MultipartUpload> {
    return listMultipartUploads(this.client, this.bucket, this.config.prefix, prefix);
  }

  /** @internal */
  async abortMultipart(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: this.objectKey(key), UploadId: uploadId }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async *walk(): AsyncGenerator<StoredObject> {
    for await (const o of this.list()) {
      // Content always sits in a "folder" (`<deviceId>/...`): the marker at the top is not content,
      // and resumable uploads in progress are not either.
      if (!o.key.includes('/') || o.key.startsWith(TUS_PREFIX)) continue;
      yield { key: o.key, size: o.size, modifiedAt: o.modifiedAt };
    }
  }

  async sweepStaging(olderThanMs: number): Promise<number> {
    const before = Date.now() - olderThanMs;
    let removed = 0;
    for await (const o of this.list(STAGING_PREFIX)) {
      if (o.modifiedAt.getTime() >= before) continue;
      await this.deleteObject(this.objectKey(o.key));
      removed++;
    }
    // A stage cut off by a crash leaves a multipart upload whose parts are stored (and billed).
    for await (const u of this.multipartUploads(STAGING_PREFIX)) {
      if (u.initiated.getTime() >= before) continue;
      await this.abortMultipart(u.key, u.uploadId);
      removed++;
    }
    return removed;
  }

  async readMarker(): Promise<string | undefined> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(MARKER_KEY) }));
      return (await res.Body!.transformToString()).trim();
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async claimMarker(storeId: string): Promise<string> {
    const existing = await this.readMarker();
    if (existing !== undefined) return existing;
    // If-None-Match: * makes the write conditional: of two claims at once, one is refused.
    const write = () =>
      this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: this.objectKey(MARKER_KEY), Body: `${storeId}\n`, IfNoneMatch: '*', ContentType: 'text/plain' }),
      );
    try {
      await write().catch(async (err: unknown) => {
        if ((err as Error).name !== 'NoSuchBucket') throw err;
        // A first start on a bucket nobody created yet: create it (needs s3:CreateBucket, which the
        // least-privilege policy in docs/OPERATIONS.md leaves out; then create it beforehand).
        await this.client.send(new CreateBucketCommand({ Bucket: this.bucket })).catch((e: unknown) => {
          if (!['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes((e as Error).name)) throw e;
        });
        await write();
      });
    } catch (err) {
      if (statusOf(err) !== 412 && statusOf(err) !== 409) throw err;
    }
    return (await this.readMarker()) as string;
  }

  /** For /readyz: the bucket answers a listing of one key. */
  async ping(): Promise<boolean> {
    try {
      await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.config.prefix, MaxKeys: 1 }));
      return true;
    } catch {
      return false;
    }
  }
}
