import net from 'node:net';
import type { Api, ApiResponse } from './client';

/** Upload-Metadata as tus encodes it: `key base64(value)` pairs; a null value is a bare key. */
export function encodeMetadata(metadata: Record<string, string | null>): string {
  return Object.entries(metadata)
    .map(([k, v]) => (v === null ? k : `${k} ${Buffer.from(v, 'utf8').toString('base64')}`))
    .join(',');
}

/** Raw tus requests over fetch, to probe each protocol rule exactly. */
export class TusRaw {
  constructor(readonly api: Api) {}

  create(length: number | null, metadata: Record<string, string | null>, headers: Record<string, string> = {}): Promise<ApiResponse> {
    const h: Record<string, string> = { 'tus-resumable': '1.0.0', 'upload-metadata': encodeMetadata(metadata), ...headers };
    if (length !== null) h['upload-length'] = String(length);
    return this.api.request('POST', '/v1/uploads', { headers: h });
  }

  patch(location: string, offset: number, body: Buffer, headers: Record<string, string> = {}): Promise<ApiResponse> {
    return this.api.request('PATCH', location, {
      body,
      headers: { 'tus-resumable': '1.0.0', 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream', ...headers },
    });
  }

  head(location: string): Promise<ApiResponse> {
    return this.api.request('HEAD', location, { headers: { 'tus-resumable': '1.0.0' } });
  }

  delete(location: string): Promise<ApiResponse> {
    return this.api.request('DELETE', location, { headers: { 'tus-resumable': '1.0.0' } });
  }

  /** Creates an upload and returns its path (`/v1/uploads/<id>`); fails the test on anything but 201. */
  async start(length: number, metadata: Record<string, string | null>): Promise<string> {
    const res = await this.create(length, metadata);
    if (res.status !== 201) throw new Error(`upload creation failed: ${res.status} ${res.text}`);
    return new URL(res.headers.get('location')!, this.api.baseUrl).pathname;
  }
}

/**
 * A TCP proxy in front of the gateway that counts the bytes clients send, and can cut every
 * connection once a given number of them went through: a network that fails mid-upload.
 */
export class CuttingProxy {
  sent = 0;
  cutAfter: number | undefined;
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();

  private constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => this.relay(client));
  }

  static async start(targetUrl: string): Promise<CuttingProxy> {
    const u = new URL(targetUrl);
    const proxy = new CuttingProxy({ host: u.hostname, port: Number(u.port) });
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    const { port } = this.server.address() as net.AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  private relay(client: net.Socket): void {
    const upstream = net.connect(this.target);
    this.sockets.add(client).add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      let data = chunk;
      if (this.cutAfter !== undefined && this.sent + data.length > this.cutAfter) {
        data = data.subarray(0, Math.max(0, this.cutAfter - this.sent));
        this.sent += data.length;
        upstream.write(data, close);
        return;
      }
      this.sent += data.length;
      if (!upstream.write(data)) client.pause();
    });
    upstream.on('drain', () => client.resume());
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
