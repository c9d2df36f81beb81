import { pipeline, type Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { BaseCopyStaging } from '../base-copy';
import { ContentNotFoundError, type ByteRange, type StagedContent } from '../content.store';
import { HashMeter } from '../hash.meter';
import { isNotFound, statusOf } from './s3.client';

const MiB = 1024 * 1024;
/** S3's smallest part, but for the last one. */
export const MIN_PART = 5 * MiB;
/** A copied range longer than this goes as several part copies, which the store runs side by side. */
export const COPY_PART = 64 * MiB;

export interface BaseCopyTarget {
  client: S3Client;
  bucket: string;
  /** The store key of the staging object, and its object key. */
  stagingKey: string;
  objectKey: string;
  /** The base's store key (named in a not-found error), `bucket/object key` for CopySource, and its ETag. */
  baseKey: string;
  copySource: string;
  baseEtag: () => Promise<string | undefined>;
  /** The size of each part of new bytes, and how many parts go out at once. */
  partSize: number;
  partsInFlight: number;
  maxBytes: number;
}

/**
 * New content staged as one multipart upload, on S3: each copied range of the base long enough to
 * be a part of its own (MIN_PART, once the new bytes before it are topped up to MIN_PART with its
 * first bytes) becomes UploadPartCopy parts, so its bytes are never sent again; the other bytes go
 * out as parts of `partSize`. The source carries every byte all the same, and all of them are hashed:
 * the SHA-256 of the staged content is that of the bytes that went by, the copied ranges read from
 * the base at the ETag the copies are pinned to (CopySourceIfMatch). Reading them costs a GET of
 * those ranges, which the chunk list of the new content needs anyway, beside the copies; copying
 * without them and reading the completed object back was measured no faster, and would find a bad
 * chunk list only after completing (docs/ARCHITECTURE.md, "Content on S3").
 * Content that never needs a part (no long copy, less than one part of new bytes) is one PutObject.
 * Any failure aborts the multipart upload once its parts in flight have settled.
 */
export class S3BaseCopyStaging implements BaseCopyStaging {
  private readonly copies: Array<{ at: number; range: ByteRange }> = [];
  private uploadId: string | undefined;
  private readonly parts: Array<Promise<CompletedPart>> = [];
  private readonly inFlight = new Set<Promise<void>>();
  private failure: unknown;
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  /** Bytes of the new content taken so far, and how many of those to come are being copied. */
  private position = 0;
  private skip = 0;
  /** Bytes copied inside the store. */
  copiedBytes = 0;

  constructor(private readonly t: BaseCopyTarget) {}

  copying(position: number, range: ByteRange): void {
    this.copies.push({ at: position, range });
  }

  async stage(source: Readable): Promise<StagedContent> {
    const meter = new HashMeter(this.t.maxBytes);
    // The source's failure (a client gone, a limit) fails the meter, and so the iteration below.
    pipeline(source, meter, () => undefined);
    let written = false;
    try {
      for await (const piece of meter as AsyncIterable<Buffer>) await this.take(piece);
      written = true;
      await this.finish();
      return { stagingKey: this.t.stagingKey, size: meter.received, sha256: meter.digest() };
    } catch (err) {
      meter.destroy();
      await this.abort(written);
      throw meter.errored ?? source.errored ?? err;
    }
  }

  private async take(piece: Buffer): Promise<void> {
    for (let at = 0; at < piece.length; ) {
      if (this.failure) throw this.failure;
      if (this.skip === 0) await this.startCopy();
      const left = piece.length - at;
      if (this.skip > 0) {
        const n = Math.min(this.skip, left);
        this.skip -= n;
        this.position += n;
        at += n;
        continue;
      }
      const next = this.copies[0]?.at;
      const n = Math.min(left, next !== undefined && next > this.position ? next - this.position : left, this.t.partSize - this.bufferedBytes);
      this.buffered.push(piece.subarray(at, at + n));
      this.bufferedBytes += n;
      this.position += n;
      at += n;
      if (this.bufferedBytes >= this.t.partSize) await this.sendBuffered();
    }
  }

  /** At the start of a copied range: copies it in the store when it can be parts of its own. */
  private async startCopy(): Promise<void> {
    while (this.copies[0] && this.copies[0].at < this.position) this.copies.shift();
    const c = this.copies[0];
    if (!c || c.at !== this.position) return;
    this.copies.shift();
    const length = c.range.end - c.range.start + 1;
    const topUp = this.bufferedBytes > 0 && this.bufferedBytes < MIN_PART ? MIN_PART - this.bufferedBytes : 0;
    // Too short to stand as a part: its bytes go with the new ones.
    if (length - topUp < MIN_PART) return;
    if (topUp > 0) {
      // Its first bytes make the new bytes before it a whole part; the rest is copied after them.
      this.copies.unshift({ at: c.at + topUp, range: { start: c.range.start + topUp, end: c.range.end } });
      return;
    }
    if (this.bufferedBytes > 0) await this.sendBuffered();
    const count = Math.ceil(length / COPY_PART);
    let start = c.range.start;
    for (let i = 0; i < count; i++) {
      const end = i === count - 1 ? c.range.end : start + Math.floor(length / count) - 1;
      const range = `bytes=${start}-${end}`;
      await this.send(async (PartNumber, UploadId) => {
        const res = await this.t.client
          .send(
            new UploadPartCopyCommand({
              ...this.where(),
              UploadId,
              PartNumber,
              CopySource: this.t.copySource,
              CopySourceRange: range,
              CopySourceIfMatch: await this.t.baseEtag(),
            }),
          )
          .catch((err: unknown) => {
            throw isNotFound(err) || statusOf(err) === 412 ? new ContentNotFoundError(this.t.baseKey) : err;
          });
        return { PartNumber, ETag: res.CopyPartResult?.ETag };
      });
      start = end + 1;
    }
    this.copiedBytes += length;
    this.skip = length;
  }

  private where() {
    return { Bucket: this.t.bucket, Key: this.t.objectKey };
  }

  private async sendBuffered(): Promise<void> {
    const body = Buffer.concat(this.buffered, this.bufferedBytes);
    this.buffered = [];
    this.bufferedBytes = 0;
    await this.send(async (PartNumber, UploadId) => {
      const res = await this.t.client.send(new UploadPartCommand({ ...this.where(), UploadId, PartNumber, Body: body, ContentLength: body.length }));
      return { PartNumber, ETag: res.ETag };
    });
  }

  /** Starts a part (numbered in the order of the content) once fewer than `partsInFlight` are out. */
  private async send(part: (partNumber: number, uploadId: string) => Promise<CompletedPart>): Promise<void> {
    this.uploadId ??= (await this.t.client.send(new CreateMultipartUploadCommand(this.where()))).UploadId!;
    while (this.inFlight.size >= this.t.partsInFlight) await Promise.race(this.inFlight);
    if (this.failure) throw this.failure;
    const sent = part(this.parts.length + 1, this.uploadId);
    this.parts.push(sent);
    const settled: Promise<void> = sent.then(
      () => {
        this.inFlight.delete(settled);
      },
      (err: unknown) => {
        this.failure ??= err;
        this.inFlight.delete(settled);
      },
    );
    this.inFlight.add(settled);
  }

  private async finish(): Promise<void> {
    if (!this.uploadId) {
      const body = Buffer.concat(this.buffered, this.bufferedBytes);
      await this.t.client.send(new PutObjectCommand({ ...this.where(), Body: body, ContentLength: body.length }));
      return;
    }
    // The last part may be of any size.
    if (this.bufferedBytes > 0) await this.sendBuffered();
    const parts = await Promise.all(this.parts);
    await this.t.client.send(new CompleteMultipartUploadCommand({ ...this.where(), UploadId: this.uploadId, MultipartUpload: { Parts: parts } }));
    // The hash covers the bytes that went by; the object must be exactly as long, or a copy stood for other bytes.
    const head = await this.t.client.send(new HeadObjectCommand(this.where()));
    if (head.ContentLength !== this.position) throw new Error(`staged ${head.ContentLength} bytes on S3 for ${this.position} assembled`);
  }

  /**
   * Once the parts in flight have settled: the upload aborted, and an object a finish may have
   * written removed. Should the store refuse even that, the staging sweep finds what is left.
   */
  private async abort(finishing: boolean): Promise<void> {
    await Promise.allSettled(this.parts);
    if (this.uploadId) await this.t.client.send(new AbortMultipartUploadCommand({ ...this.where(), UploadId: this.uploadId })).catch(() => undefined);
    if (finishing) await this.t.client.send(new DeleteObjectCommand(this.where())).catch(() => undefined);
  }
}
