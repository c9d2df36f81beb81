import type { Readable } from 'node:stream';
import { GetObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { LRUCache } from 'lru-cache';
import { ContentNotFoundError, type ByteRange, type ContentHandle } from '../content.store';
import { isNotFound, statusOf } from './s3.client';

/** Size and ETag of objects read recently; the least recently read are dropped first. */
const HEAD_CACHE_ENTRIES = 10_000;

export interface ObjectHead {
  size: number;
  etag: string | undefined;
  modifiedAt: Date;
}

/**
 * The read side of the S3 content store, by full object key: HEADs, and GETs pinned to the ETag a
 * handle was opened on, whose body (the SDK's stream) goes to the reader as it is.
 */
export class S3Reads {
  /**
   * A content key is never written twice (a replacement gets a new key), so what a HEAD said of it
   * holds until it is removed: reads of a key seen before skip that round trip. The GET is still
   * pinned to the ETag, so a stale entry can only make a read fail, never serve other bytes.
   */
  private readonly heads = new LRUCache<string, ObjectHead>({ max: HEAD_CACHE_ENTRIES });

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  /** A handle on the object `objectKey`; `key` (the store's key of it) names it in a not-found error. */
  async open(objectKey: string, key: string): Promise<ContentHandle> {
    const head = await this.known(objectKey);
    if (!head) throw new ContentNotFoundError(key);
    const { size, etag } = head;
    return {
      size,
      // Pinned to the ETag seen at opening: bytes of a newer object under the key are never mixed in.
      read: (range?: ByteRange) => this.download(objectKey, key, etag, range),
      close: async () => undefined,
    };
  }

  /** What a HEAD said of the object, from the cache when it was seen before; undefined when there is none. */
  async known(objectKey: string): Promise<ObjectHead | undefined> {
    let head = this.heads.get(objectKey);
    if (!head) {
      head = await this.head(objectKey);
      if (head) this.heads.set(objectKey, head);
    }
    return head;
  }

  /** The object's size, ETag and date, undefined when there is none. Never cached: a stat is a fresh look. */
  async head(objectKey: string): Promise<ObjectHead | undefined> {
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: objectKey }));
      return { size: res.ContentLength ?? 0, modifiedAt: res.LastModified ?? new Date(0), etag: res.ETag || undefined };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Drops what is known of an object being removed. */
  forget(objectKey: string): void {
    this.heads.delete(objectKey);
  }

  /** The SDK's response body itself, the Range passed to the store: nothing between it and the reader. */
  private async download(objectKey: string, key: string, etag: string | undefined, range?: ByteRange): Promise<Readable> {
    try {
      const res = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: objectKey,
          ...(etag ? { IfMatch: etag } : {}),
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      return res.Body as Readable;
    } catch (err) {
      const gone = isNotFound(err) || statusOf(err) === 412;
      if (gone) this.heads.delete(objectKey);
      throw gone ? new ContentNotFoundError(key) : err;
    }
  }
}
