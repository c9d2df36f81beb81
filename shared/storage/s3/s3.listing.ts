import { ListMultipartUploadsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { StoredObject } from '../content.store';

export interface MultipartUpload {
  /** The store key (without the store's prefix). */
  key: string;
  uploadId: string;
  initiated: Date;
}

/** Every object under `storePrefix + prefix`, as store keys (the store's prefix taken off), page by page. */
export async function* listObjects(client: S3Client, bucket: string, storePrefix: string, prefix: string): AsyncGenerator<StoredObject> {
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: storePrefix + prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      if (!o.Key) continue;
      yield { key: o.Key.slice(storePrefix.length), size: o.Size ?? 0, modifiedAt: o.LastModified ?? new Date(0) };
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}

/** Multipart uploads in progress under `storePrefix + prefix`, as store keys. */
export async function* listMultipartUploads(client: S3Client, bucket: string, storePrefix: string, prefix: string): AsyncGenerator<MultipartUpload> {
  let keyMarker: string | undefined;
  let uploadIdMarker: string | undefined;
  for (;;) {
    const page = await client.send(
      new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: storePrefix + prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
    );
    for (const u of page.Uploads ?? []) {
      if (u.Key && u.UploadId) yield { key: u.Key.slice(storePrefix.length), uploadId: u.UploadId, initiated: u.Initiated ?? new Date(0) };
    }
    if (!page.IsTruncated) return;
    keyMarker = page.NextKeyMarker;
    uploadIdMarker = page.NextUploadIdMarker;
  }
}
