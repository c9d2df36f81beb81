import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';

export interface StreamedPut {
  client: S3Client;
  bucket: string;
  key: string;
  /** The size of each part but the last (at least 5 MiB, S3's smallest). */
  partSize: number;
  /** Parts sent at once; reading `source` waits while this many are in flight. */
  partsInFlight: number;
}

/**
 * Writes the bytes of `source` to one object with @aws-sdk/lib-storage's Upload: content that fits in
 * one part is one PutObject, larger content a multipart upload whose parts go out while the next is
 * read. The library reads the source only when a part is wanted, so at most `partsInFlight` parts
 * being sent and the one being gathered are in memory. On any failure, the source's included, the
 * library aborts the multipart upload once its parts in flight have settled (no part is left stored)
 * and the error is rethrown.
 */
export async function putStreamed(put: StreamedPut, source: AsyncIterable<Buffer>): Promise<void> {
  const body = Readable.from(source, { objectMode: false });
  const upload = new Upload({
    client: put.client,
    params: { Bucket: put.bucket, Key: put.key, Body: body },
    partSize: put.partSize,
    queueSize: put.partsInFlight,
    leavePartsOnError: false,
  });
  try {
    await upload.done();
  } finally {
    // A failed part leaves the rest of the source unread: it is let go rather than left paused.
    body.destroy();
  }
}
