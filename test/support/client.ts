/** A small HTTP client over fetch for the integration tests. */
export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export class Api {
  constructor(
    readonly baseUrl: string,
    readonly token?: string,
    /** The account password this client signed in with, for requests that confirm it. */
    readonly password?: string,
  ) {}

  withToken(token: string): Api {
    return new Api(this.baseUrl, token);
  }

  async request<T = any>(method: string, url: string, init: { json?: unknown; body?: RequestInit['body']; headers?: Record<string, string> } = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(init.headers ?? {}) };
    if (this.token && !('authorization' in headers)) headers.authorization = `Bearer ${this.token}`;
    let body = init.body;
    if (init.json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = typeof init.json === 'string' ? init.json : JSON.stringify(init.json);
    }
    const res = await fetch(this.baseUrl + url, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  get<T = any>(url: string, headers?: Record<string, string>) {
    return this.request<T>('GET', url, { headers });
  }
  post<T = any>(url: string, json?: unknown) {
    return this.request<T>('POST', url, { json });
  }
  patch<T = any>(url: string, json?: unknown) {
    return this.request<T>('PATCH', url, { json });
  }
  delete<T = any>(url: string) {
    return this.request<T>('DELETE', url);
  }

  /** Multipart upload with one file part and optional text fields. */
  upload<T = any>(fields: Record<string, string>, file?: { name: string; content: Buffer | string; type?: string }) {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    if (file) form.append('file', new Blob([file.content], file.type ? { type: file.type } : {}), file.name);
    return this.request<T>('POST', '/v1/files', { body: form });
  }

  async registerDevice(name = 'test device'): Promise<string> {
    const res = await this.post('/v1/devices', { name, platform: 'linux' });
    if (res.status !== 201) throw new Error(`device registration failed: ${res.status} ${res.text}`);
    return res.body.id;
  }

  /** Registers a device and logs in; returns a client carrying the token. */
  async login(username: string, password: string, deviceId?: string): Promise<{ api: Api; userId: string; deviceId: string; token: string }> {
    const device = deviceId ?? (await this.registerDevice());
    const res = await this.post('/v1/auth/login', { username, password, deviceId: device });
    if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
    return { api: new Api(this.baseUrl, res.body.token, password), userId: res.body.user.id, deviceId: device, token: res.body.token };
  }

  /** As an admin client: creates a user and logs it in on a new device. */
  async createUser(username: string, password = 'user-password-1') {
    const res = await this.post('/v1/users', { username, password });
    if (res.status !== 201) throw new Error(`user creation failed: ${res.status} ${res.text}`);
    return new Api(this.baseUrl).login(username, password);
  }
}
