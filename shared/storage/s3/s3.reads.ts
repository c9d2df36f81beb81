import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { ContentNotFoundError, type ByteRange, type ContentHandle, type PrefetchedContent } from '../content.store';
import { isNotFound, statusOf } from './s3.client';
import type { S3SocketReads, StartedRead } from './s3.socket-reads';

/** Size and ETag of objects read recently; the oldest are dropped first. */
const HEAD_CACHE_ENTRIES = 10_000;

export interface ObjectHead {
  size: number;
  etag: string | undefined;
  modifiedAt: Date;
}

/**
 * The read side of the S3 content store, by full object key: HEADs, and GETs pinned to the ETag a
 * handle was opened on.
 */
export class S3Reads {
  /**
   * A content key is never written twice (a replacement gets a new key), so what a HEAD said of it
   * holds until it is removed: reads of a key seen before skip that round trip. The GET is still
   * pinned to the ETag, so a stale entry can only make a read fail, never serve other bytes.
   */
  private readonly heads = new Map<string, ObjectHead>();
  /** Reads started by `prefetch`: written by their handle, or dropped. */
  readonly prefetches = { used: 0, dropped: 0 };

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    /** Reads straight into a response, on a plain-HTTP endpoint (s3.socket-reads.ts). */
    private readonly sockets?: S3SocketReads,
  ) {}

  /** A handle on the object `objectKey`; `key` (the store's key of it) names it in a not-found error. */
  async open(objectKey: string, key: string): Promise<ContentHandle> {
    let head = this.heads.get(objectKey);
    if (!head) {
      head = await this.head(objectKey);
      if (!head) throw new ContentNotFoundError(key);
      if (this.heads.size >= HEAD_CACHE_ENTRIES) this.heads.delete(this.heads.keys().next().value as string);
      this.heads.set(objectKey, head);
    }
    return this.handle(objectKey, head);
  }

  /**
   * The bytes in `range` of an object read recently (its size and ETag known), requested now over a
   * socket and read when the handle `open` gives is written; undefined for any other object.
   */
  prefetch(objectKey: string, key: string, range: ByteRange | undefined): PrefetchedContent | undefined {
    const head = this.heads.get(objectKey);
    if (!head || !this.sockets || (range && range.end >= head.size)) return undefined;
    const started = this.sockets.start(objectKey, head.etag, head.size, range);
    const cancel = () => {
      this.prefetches.dropped++;
      started.cancel();
    };
    return { key, open: async () => this.handle(objectKey, head, { range, started }), cancel };
  }

  /** A handle on an object whose HEAD is known; `early`, a read already started for one range. */
  private handle(objectKey: string, head: ObjectHead, early?: { range: ByteRange | undefined; started: StartedRead }): ContentHandle {
    const { etag, size } = head;
    const { sockets } = this;
    let pending = early;
    const drop = () => {
      if (!pending) return;
      this.prefetches.dropped++;
      pending.started.cancel();
      pending = undefined;
    };
    // The started read serves the range it was started on, once; anything else drops it.
    const startedFor = (range: ByteRange | undefined) => {
      if (!pending || pending.range?.start !== range?.start || pending.range?.end !== range?.end) return drop();
      const { started } = pending;
      pending = undefined;
      this.prefetches.used++;
      return started;
    };
    return {
      size,
      // Pinned to the ETag seen at opening: bytes of a newer object under the key are never mixed in.
      read: (range?: ByteRange) => {
        drop();
        return this.download(objectKey, etag, range);
      },
      ...(sockets && {
        writeTo: async (dest: Writable, range?: ByteRange) => {
          const started = startedFor(range) ?? sockets.start(objectKey, etag, size, range);
          const outcome = await started.writeTo(dest);
          if (outcome.sent) return;
          // Declined before a byte was sent: the SDK reads it, retrying and naming the error.
          await pipeline(await this.download(objectKey, etag, range), dest, { end: false });
        },
      }),
      close: async () => drop(),
    };
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

  /** The SDK's response body itself: nothing between it and the reader. */
  private async download(objectKey: string, etag: string | undefined, range?: ByteRange): Promise<Readable> {
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
      throw gone ? new ContentNotFoundError(objectKey) : err;
    }
  }
}
