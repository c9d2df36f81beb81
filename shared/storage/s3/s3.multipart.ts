import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';

/** S3 numbers the parts of one upload from 1 to 10,000. */
const MAX_PARTS = 10_000;
/** Spare part buffers are let go after this long without an upload. */
const SPARE_IDLE_MS = 30_000;

/**
 * Part-sized buffers that outlive one upload. An upload through @aws-sdk/lib-storage gathers each
 * part with Buffer.concat into fresh memory, and V8 answers every 64 MB of such memory with a full
 * garbage collection: in the S3 bench, one every 70 to 100 ms of a 100 MiB upload, 9 to 25 ms each,
 * about 1 ms of the gateway's CPU per MiB. Filling the same few buffers again avoids both that and
 * the copy into pages never touched before.
 */
export class PartBuffers {
  private readonly spare: Buffer[] = [];
  private idle: NodeJS.Timeout | undefined;

  constructor(
    readonly partSize: number,
    /** Spare buffers kept at most; those past it are left to the garbage collector. */
    private readonly maxSpare: number,
  ) {}

  take(): Buffer {
    return this.spare.pop() ?? Buffer.allocUnsafe(this.partSize);
  }

  /** Hands back a buffer no request holds any more. */
  give(buf: Buffer): void {
    if (this.spare.length < this.maxSpare) this.spare.push(buf);
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.spare.splice(0), SPARE_IDLE_MS).unref();
  }
}

export interface StreamedPut {
  client: S3Client;
  bucket: string;
  key: string;
  /** The parts' memory; its part size is that of the upload. */
  buffers: PartBuffers;
  /** Parts sent at once; reading `source` waits while this many are in flight. */
  partsInFlight: number;
}

/**
 * Writes the bytes of `source` to one object, streamed: content that fits in one part is one
 * PutObject, larger content a multipart upload whose parts go out while the next is read. At most
 * `partsInFlight` parts are in memory, those being sent and the one being filled. On any failure,
 * the source's included, the multipart upload is aborted once its parts in flight have settled, so
 * that no part is left stored; the error is rethrown.
 */
export async function putStreamed(put: StreamedPut, source: AsyncIterable<Buffer>): Promise<void> {
  const { client, bucket, key, buffers } = put;
  const size = buffers.partSize;
  const done: CompletedPart[] = [];
  const inFlight = new Set<Promise<void>>();
  let created: Promise<string> | undefined;
  let failure: { error: unknown } | undefined;
  let partNumber = 0;

  const uploadId = () =>
    (created ??= client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key })).then((res) => {
      if (!res.UploadId) throw new Error('the object store started a multipart upload without an UploadId');
      return res.UploadId;
    }));

  const send = async (buf: Buffer, length: number) => {
    const number = ++partNumber;
    if (number > MAX_PARTS) throw new Error(`content over ${MAX_PARTS} parts of ${size} bytes`);
    const sent: Promise<void> = uploadId()
      .then((id) => client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: id, PartNumber: number, Body: buf.subarray(0, length) })))
      .then((res) => {
        done.push({ PartNumber: number, ETag: res.ETag });
        // Only a part that was sent whole comes back: a failed request may still hold its buffer.
        buffers.give(buf);
      })
      .catch((error: unknown) => {
        failure ??= { error };
      })
      .finally(() => inFlight.delete(sent));
    inFlight.add(sent);
    while (inFlight.size >= put.partsInFlight) await Promise.race(inFlight);
    if (failure) throw failure.error;
  };

  let part = buffers.take();
  let filled = 0;
  try {
    for await (const chunk of source) {
      for (let at = 0; at < chunk.length; ) {
        const n = Math.min(chunk.length - at, size - filled);
        chunk.copy(part, filled, at, at + n);
        filled += n;
        at += n;
        if (filled === size) {
          await send(part, filled);
          part = buffers.take();
          filled = 0;
        }
      }
    }
    if (partNumber === 0) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: part.subarray(0, filled) }));
      buffers.give(part);
      return;
    }
    if (filled > 0) await send(part, filled);
    else buffers.give(part);
    await Promise.all(inFlight);
    if (failure) throw failure.error;
    done.sort((a, b) => a.PartNumber! - b.PartNumber!);
    await client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: await uploadId(), MultipartUpload: { Parts: done } }));
  } catch (err) {
    await Promise.allSettled(inFlight);
    if (created) {
      const id = await created.catch(() => undefined);
      if (id) await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: id })).catch(() => undefined);
    }
    throw err;
  }
}
