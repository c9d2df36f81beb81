import http from 'node:http';
import type { Readable } from 'node:stream';

export interface HttpResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface RequestInit {
  headers?: Record<string, string | number>;
  body?: string | Buffer | Readable;
  /** Count the response bytes without keeping them (large downloads). */
  discardBody?: boolean;
}

/**
 * A plain keep-alive HTTP/1.1 client. Lighter than fetch on a 2-core machine, where the load
 * generator competes with the service for the same CPUs.
 */
export class HttpClient {
  readonly url: URL;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 512 });

  constructor(baseUrl: string) {
    this.url = new URL(baseUrl);
  }

  request(method: string, path: string, init: RequestInit = {}): Promise<HttpResult & { bytes: number }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { ...(init.headers ?? {}) };
      if (typeof init.body === 'string' || Buffer.isBuffer(init.body)) headers['content-length'] ??= Buffer.byteLength(init.body);
      const req = http.request(
        { host: this.url.hostname, port: this.url.port, method, path, headers, agent: this.agent },
        (res) => {
          const chunks: Buffer[] = [];
          let bytes = 0;
          res.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            if (!init.discardBody) chunks.push(chunk);
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), bytes }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      const body = init.body;
      if (body === undefined) req.end();
      else if (typeof body === 'string' || Buffer.isBuffer(body)) req.end(body);
      else {
        body.on('error', (err) => req.destroy(err));
        body.pipe(req);
      }
    });
  }

  async json<T = any>(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: T; text: string }> {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = typeof body === 'string' ? body : JSON.stringify(body);
    }
    const res = await this.request(method, path, { headers, ...(payload === undefined ? {} : { body: payload }) });
    const text = res.body.toString('utf8');
    let parsed: unknown = text;
    if (String(res.headers['content-type'] ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, body: parsed as T, text };
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface BenchUser {
  username: string;
  password: string;
  userId: string;
  deviceId: string;
  token: string;
}

/** Registers a device and logs in on it, through the API. */
export async function login(client: HttpClient, username: string, password: string, deviceId?: string): Promise<BenchUser> {
  let device = deviceId;
  if (!device) {
    const reg = await client.json('POST', '/v1/devices', { name: `bench ${username}`, platform: 'bench' });
    if (reg.status !== 201) throw new Error(`device registration failed: ${reg.status} ${reg.text}`);
    device = reg.body.id as string;
  }
  const res = await client.json('POST', '/v1/auth/login', { username, password, deviceId: device });
  if (res.status !== 200) throw new Error(`login of ${username} failed: ${res.status} ${res.text}`);
  return { username, password, userId: res.body.user.id, deviceId: device, token: res.body.token };
}

/** Creates users through the admin API and logs each in on a device of its own. */
export async function provisionUsers(client: HttpClient, adminToken: string, names: string[], concurrency = 4): Promise<BenchUser[]> {
  const out: BenchUser[] = new Array(names.length);
  let next = 0;
  const password = 'bench-password-1';
  const worker = async () => {
    while (next < names.length) {
      const i = next++;
      const username = names[i]!;
      const created = await client.json('POST', '/v1/users', { username, password }, adminToken);
      if (created.status !== 201) throw new Error(`user creation failed: ${created.status} ${created.text}`);
      out[i] = await login(client, username, password);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, names.length) }, worker));
  return out;
}
