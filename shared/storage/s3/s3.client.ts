import { Agent } from 'node:https';
import { Agent as HttpAgent } from 'node:http';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { S3Config } from '../../config';

/** Connections kept per client: parts of several uploads and downloads go out at once. */
const MAX_SOCKETS = 64;

/**
 * The S3 client of a store. Credentials are the configuration's static pair when given, else the
 * SDK's default chain (environment, web identity on Kubernetes, instance or task role); they are
 * handed to the SDK and never logged. Checksums only where S3 requires them: S3-compatible servers
 * (Ceph RGW among them) refuse or ignore the newer `x-amz-checksum-*` trailers of streamed PUTs.
 */
export function createS3Client(config: S3Config): S3Client {
  quietNodeVersionNotice();
  return new S3Client(s3ClientOptions(config));
}

/**
 * The SDK prints a notice that its releases after January 2027 will need Node 22 to stderr, as plain
 * text, at its first client: it would break the one-JSON-object-per-line logs, and the versions
 * pinned in package.json run on Node 20. The SDK reads this switch for exactly that purpose.
 */
function quietNodeVersionNotice(): void {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
}

/** The options of every client of a store (the resumable uploads' library makes its own). */
export function s3ClientOptions(config: S3Config): S3ClientConfig {
  quietNodeVersionNotice();
  const agentOptions = { keepAlive: true, maxSockets: MAX_SOCKETS };
  return {
    region: config.region,
    endpoint: config.endpoint,
    forcePathStyle: config.forcePathStyle,
    ...(config.credentials ? { credentials: { ...config.credentials } } : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 3,
    requestHandler: {
      httpAgent: new HttpAgent(agentOptions),
      httpsAgent: new Agent(agentOptions),
      connectionTimeout: 5000,
    },
  };
}

/** The HTTP status of an SDK error, when it came from the server. */
export function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

export const isNotFound = (err: unknown): boolean =>
  statusOf(err) === 404 || ['NotFound', 'NoSuchKey', 'NoSuchUpload'].includes((err as { name?: string }).name ?? '');
