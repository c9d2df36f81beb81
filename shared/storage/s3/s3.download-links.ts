import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { S3Config } from '../../config';
import type { DownloadHeaders } from '../content.store';
import { s3ClientOptions } from './s3.client';

/** How long a presigned download URL is valid: enough to follow a redirect, short enough not to become a share link. */
export const DOWNLOAD_URL_SECONDS = 300;

/**
 * Presigned GetObject URLs for S3_DOWNLOADS=redirect (as Outline's S3Storage and GitLab's
 * `proxy_download: false` serve files): the client reads the object from the store itself, with the
 * Content-Disposition and Content-Type the gateway would have sent. Signed for S3_PUBLIC_ENDPOINT
 * when set (the store's address as clients reach it), else for the store's own endpoint. Signing is
 * local: no request leaves the gateway.
 */
export class S3DownloadLinks {
  private readonly signer: S3Client;
  private readonly bucket: string;

  constructor(config: S3Config) {
    this.bucket = config.bucket;
    this.signer = new S3Client({ ...s3ClientOptions(config), ...(config.publicEndpoint ? { endpoint: config.publicEndpoint } : {}) });
  }

  /** A URL that reads the whole object `objectKey` with `headers` as response headers, for DOWNLOAD_URL_SECONDS. */
  url(objectKey: string, headers: DownloadHeaders): Promise<string> {
    const get = new GetObjectCommand({
      Bucket: this.bucket,
      Key: objectKey,
      ResponseContentDisposition: headers.contentDisposition,
      ResponseContentType: headers.contentType,
    });
    return getSignedUrl(this.signer, get, { expiresIn: DOWNLOAD_URL_SECONDS });
  }
}
