import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';

/**
 * Streamed content goes out in parts of this size, a few at once: content that ends within one part
 * is one PutObject, longer content a multipart upload. At most PART_SIZE x (PARTS_IN_FLIGHT + 1) bytes
 * of an upload are in memory (the parts on the wire and the one filling), whatever its size.
 */
export const PART_SIZE = 16 * 1024 * 1024;
export const PARTS_IN_FLIGHT = 4;

/** Part buffers kept for the next upload, and how long they are kept when no upload takes one. */
const KEPT_BUFFERS = PARTS_IN_FLIGHT + 1;
const KEPT_FOR_MS = 60_000;

/**
 * Part buffers reused from upload to upload. The bytes of a part are copied once, as they arrive,
 * into a buffer whose pages are already mapped: copying into a fresh 16 MiB allocation (what
 * concatenating the received chunks does) costs several times more, the kernel zeroing each new
 * page on first touch (docs/BENCHMARKS.md, "S3, 100 MiB and ranges").
 */
export class PartBuffers {
  private readonly free: Buffer[] = [];
  private release: NodeJS.Timeout | undefined;

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(PART_SIZE);
  }

  give(buffer: Buffer): void {
    if (this.free.length < KEPT_BUFFERS) this.free.push(buffer);
    clearTimeout(this.release);
    // An idle gateway gives the memory back.
    this.release = setTimeout(() => (this.free.length = 0), KEPT_FOR_MS).unref();
  }
}

export interface ObjectTarget {
  client: S3Client;
  bucket: string;
  key: string;
}

/**
 * Writes `chunks` to the object `target.key`: one PutObject when they end within a part, else a
 * multipart upload whose parts go out while the next fills, at most PARTS_IN_FLIGHT at once (the
 * reading waits, and so the sender, while that many are on the wire). A failure of `chunks` or of a
 * request aborts the multipart upload and rejects: no parts are left in the bucket.
 */
export async function putChunks(target: ObjectTarget, chunks: AsyncIterable<Buffer>, buffers: PartBuffers): Promise<void> {
  const { client, bucket: Bucket, key: Key } = target;
  let buffer: Buffer | undefined = buffers.take();
  let filled = 0;
  let partCount = 0;
  let uploadId: string | undefined;
  const parts: CompletedPart[] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;

  const sendPart = async (partNumber: number, part: Buffer, length: number): Promise<void> => {
    try {
      const res = await client.send(
        new UploadPartCommand({ Bucket, Key, UploadId: uploadId, PartNumber: partNumber, Body: part.subarray(0, length), ContentLength: length }),
      );
      parts[partNumber - 1] = { PartNumber: partNumber, ETag: res.ETag };
    } finally {
      buffers.give(part);
    }
  };
  const flush = async (last: boolean): Promise<void> => {
    uploadId ??= (await client.send(new CreateMultipartUploadCommand({ Bucket, Key }))).UploadId;
    const sending = sendPart(++partCount, buffer!, filled).catch((err: unknown) => {
      failure ??= err;
    });
    inFlight.add(sending);
    void sending.finally(() => inFlight.delete(sending));
    buffer = last ? undefined : buffers.take();
    filled = 0;
    if (inFlight.size >= PARTS_IN_FLIGHT) await Promise.race(inFlight);
    if (failure) throw failure;
  };

  try {
    for await (const chunk of chunks) {
      for (let offset = 0; offset < chunk.length; ) {
        const copied = chunk.copy(buffer!, filled, offset, Math.min(chunk.length, offset + PART_SIZE - filled));
        filled += copied;
        offset += copied;
        if (filled === PART_SIZE) await flush(false);
      }
    }
    if (uploadId === undefined) {
      await client.send(new PutObjectCommand({ Bucket, Key, Body: buffer!.subarray(0, filled), ContentLength: filled }));
      return;
    }
    if (filled > 0) await flush(true);
    await Promise.all(inFlight);
    if (failure) throw failure;
    await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId: uploadId, MultipartUpload: { Parts: parts } }));
  } catch (err) {
    await Promise.allSettled(inFlight);
    if (uploadId !== undefined) {
      await client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId })).catch(() => undefined);
    }
    throw err;
  } finally {
    if (buffer) buffers.give(buffer);
  }
}
