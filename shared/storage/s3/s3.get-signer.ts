import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import { SignatureV4 } from '@smithy/signature-v4';
import type { S3Config } from '../../config';

/** How long a signed request head is reused, and for how many objects at most. */
const SIGNATURE_REUSE_MS = 60_000;
const SIGNATURES_KEPT = 1024;
/** SHA-256 of the empty body of a GET, as SigV4 signs it. */
const EMPTY_BODY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

const toBytes = (data: string | ArrayBuffer | ArrayBufferView): string | Uint8Array =>
  typeof data === 'string' ? data : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);

/** Node's hashes in the shape the SigV4 signer takes. */
class NodeSha256 {
  private readonly hash: Hash | Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', toBytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(toBytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return this.hash.digest();
  }
}

/** S3's encoding of a key in a path: each segment as RFC 3986 unreserved characters or escapes. */
const encodeKey = (key: string) =>
  key
    .split('/')
    .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');

/** Signs the GETs of s3.socket-reads.ts, and keeps each object's signed head for a while. */
export class GetSigner {
  private readonly signer: SignatureV4;
  /** Signed request heads by object key, oldest first. */
  private readonly signatures = new Map<string, { text: string; at: number }>();

  constructor(
    client: S3Client,
    private readonly config: S3Config,
    private readonly endpoint: URL,
  ) {
    // The client's own credential provider: the static pair or the SDK's default chain, refreshed as it expires.
    this.signer = new SignatureV4({ service: 's3', region: config.region, credentials: client.config.credentials, sha256: NodeSha256, uriEscapePath: false, applyChecksum: false });
  }

  /**
   * The request line and signed headers of a GET of `objectKey`. A signature is reused for a minute
   * (S3 accepts a request dated up to 15 minutes from its clock), so repeated reads of one object, a
   * player seeking through a video, sign once rather than on every read.
   */
  async head(objectKey: string): Promise<string> {
    const kept = this.signatures.get(objectKey);
    const now = Date.now();
    if (kept && now - kept.at < SIGNATURE_REUSE_MS) return kept.text;
    const base = this.endpoint.pathname.replace(/\/$/, '');
    const path = this.config.forcePathStyle ? `${base}/${this.config.bucket}/${encodeKey(objectKey)}` : `${base}/${encodeKey(objectKey)}`;
    const host = this.config.forcePathStyle ? this.endpoint.host : `${this.config.bucket}.${this.endpoint.host}`;
    const signed = await this.signer.sign({ method: 'GET', protocol: 'http:', hostname: host, path, query: {}, headers: { host, 'x-amz-content-sha256': EMPTY_BODY_SHA256 } });
    let text = `GET ${path} HTTP/1.1\r\n`;
    for (const [name, value] of Object.entries(signed.headers)) text += `${name}: ${value}\r\n`;
    this.signatures.delete(objectKey);
    this.signatures.set(objectKey, { text, at: now });
    if (this.signatures.size > SIGNATURES_KEPT) this.signatures.delete(this.signatures.keys().next().value!);
    return text;
  }
}
