import { spawn } from 'node:child_process';
import type { Api } from './client';

/** An app password as `POST /v1/app-passwords` answers it. */
export interface AppPassword {
  id: string;
  name: string;
  password: string;
  deviceId: string;
  createdAt: string;
}

/** `currentPassword`: the account password, by default the one `api` signed in with. */
export async function createAppPassword(api: Api, name = 'webdav client', currentPassword = api.password): Promise<AppPassword> {
  if (currentPassword === undefined) throw new Error('app password creation needs the account password');
  const res = await api.post('/v1/app-passwords', { name, currentPassword });
  if (res.status !== 201) throw new Error(`app password creation failed: ${res.status} ${res.text}`);
  return res.body as AppPassword;
}

export const basic = (username: string, password: string): string => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

export interface DavResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** A WebDAV client over fetch, signed in with Basic credentials. */
export class DavClient {
  constructor(
    readonly baseUrl: string,
    private readonly authorization: string,
  ) {}

  async request(method: string, path: string, init: { body?: string | Buffer; headers?: Record<string, string> } = {}): Promise<DavResponse> {
    const res = await fetch(this.baseUrl + path, {
      method,
      headers: { authorization: this.authorization, ...(init.headers ?? {}) },
      body: init.body,
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  propfind(path: string, depth: '0' | '1' | 'infinity', body?: string): Promise<DavResponse> {
    return this.request('PROPFIND', path, { body, headers: { depth, 'content-type': 'application/xml' } });
  }

  put(path: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<DavResponse> {
    return this.request('PUT', path, { body, headers });
  }
}

/** The `<D:href>` values of a multistatus, decoded. */
export function hrefs(multistatus: string): string[] {
  return [...multistatus.matchAll(/<D:href>([^<]*)<\/D:href>/g)].map((m) => decodeURIComponent(m[1]!));
}

/** Runs a program to its end; its exit code and output. */
export function run(command: string, args: string[], env: Record<string, string> = {}, cwd?: string, timeoutMs = 600_000): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, output });
    });
  });
}
