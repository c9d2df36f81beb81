import type * as P from '../../../shared/protocol';
import { ApiError } from './errors';
import { DEFAULT_RETRY, followRedirect, readJson, send, viaNodeHttp, type Answer, type HttpRequest, type RetryPolicy } from './http';
import type { StreamedResponse } from './node.transport';
import { resumableUpload, type ResumableUploadOptions } from './tus';

export interface ClientOptions {
  /** The service's base address, without `/v1` (for example `http://127.0.0.1:8080`). */
  server: string;
  token?: string;
  retry?: RetryPolicy;
}

export interface ListFilesQuery {
  folderId?: string;
  limit?: number;
  offset?: number;
  sort?: P.ListSort;
  order?: 'asc' | 'desc';
}

export interface UploadFileInput {
  /** The bytes: a Blob (for a file on disk, `fs.openAsBlob(path)`) or a Buffer. */
  content: Blob | Buffer;
  name: string;
  folderId?: string;
  /** A new resource id chosen by the client (32 lowercase hex). */
  id?: string;
  mimeType?: string;
  /** Hex SHA-256 of the bytes: the service refuses them (400) when they differ. */
  sha256?: string;
  signal?: AbortSignal;
}

export interface ReplaceContentInput {
  content: Blob | Buffer;
  /** `If-Match`: the sha256 the file must still have. */
  ifMatch?: string;
  /** `If-None-Match: *`: only when the file has no content yet. */
  ifNoneMatch?: boolean;
  contentType?: string;
  sha256?: string;
  signal?: AbortSignal;
}

export interface ChangesQuery {
  cursor?: string;
  limit?: number;
  /** Long poll, 0 to 60 seconds. */
  wait?: number;
  signal?: AbortSignal;
}

const hexToBase64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');
const toBlob = (content: Blob | Buffer) => (content instanceof Blob ? content : new Blob([content]));
const enc = encodeURIComponent;

/** A typed client of the whole HTTP API (the OpenAPI description served at /docs). */
export class FilesyncClient {
  readonly server: string;
  token: string | undefined;
  private readonly retry: RetryPolicy;

  constructor(options: ClientOptions) {
    this.server = options.server.replace(/\/+$/, '');
    this.token = options.token;
    this.retry = options.retry ?? DEFAULT_RETRY;
  }

  /** A raw exchange; every typed method below goes through it. */
  request(req: HttpRequest): Promise<Response> {
    return send(this.server, req, () => this.token, this.retry);
  }

  private async json<T>(req: HttpRequest): Promise<T> {
    return readJson<T>(await this.request(req));
  }

  private jsonBody(method: string, path: string, body: unknown, idempotent: boolean): Promise<Response> {
    return this.request({ method, path, body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, idempotent });
  }

  // ---- devices, sign-in, users ----
  async registerDevice(body: P.RegisterDeviceRequest): Promise<P.Device> {
    return readJson(await this.jsonBody('POST', '/devices', body, false));
  }

  /** Signs in and keeps the token for the next requests. */
  async login(body: P.LoginRequest): Promise<P.LoginResponse> {
    const res = await readJson<P.LoginResponse>(await this.jsonBody('POST', '/auth/login', body, true));
    this.token = res.token;
    return res;
  }

  async changePassword(currentPassword: string, newPassword: string): Promise<void> {
    await this.jsonBody('PATCH', '/users/me/password', { current_password: currentPassword, new_password: newPassword }, false);
  }

  resolveUser(username: string): Promise<P.UserRef> {
    return this.json({ method: 'GET', path: '/users/resolve', query: { username }, idempotent: true });
  }

  async createUser(body: P.CreateUserRequest): Promise<P.User> {
    return readJson(await this.jsonBody('POST', '/users', body, false));
  }

  async deleteUser(id: string): Promise<void> {
    await this.request({ method: 'DELETE', path: `/users/${enc(id)}`, idempotent: true });
  }

  async setQuota(userId: string, quotaBytes: number | null): Promise<P.User> {
    return readJson(await this.jsonBody('PATCH', `/users/${enc(userId)}`, { quotaBytes }, true));
  }

  usage(userId?: string): Promise<P.Usage> {
    return this.json({ method: 'GET', path: userId ? `/users/${enc(userId)}/usage` : '/users/me/usage', idempotent: true });
  }

  // ---- files and folders ----
  listFiles(query: ListFilesQuery = {}): Promise<P.Page<P.File>> {
    return this.json({ method: 'GET', path: '/files', query: { ...query }, idempotent: true });
  }

  searchFiles(q: string, limit?: number, offset?: number): Promise<P.Page<P.File>> {
    return this.json({ method: 'GET', path: '/files/search', query: { q, limit, offset }, idempotent: true });
  }

  getFile(id: string): Promise<P.File> {
    return this.json({ method: 'GET', path: `/files/${enc(id)}`, idempotent: true });
  }

  deleteFile(id: string): Promise<{ id: string }> {
    return this.json({ method: 'DELETE', path: `/files/${enc(id)}`, idempotent: true });
  }

  listFolders(parentId?: string): Promise<{ items: P.Folder[] }> {
    return this.json({ method: 'GET', path: '/folders', query: { parentId }, idempotent: true });
  }

  /** `POST /files`: a new file with its content. With `id`, a retry after a lost answer is safe. */
  async uploadFile(input: UploadFileInput): Promise<P.File> {
    const makeForm = () => {
      const form = new FormData();
      if (input.folderId) form.set('folderId', input.folderId);
      if (input.id) form.set('id', input.id);
      if (input.sha256) form.set('sha256', input.sha256);
      form.set('name', input.name);
      const blob = toBlob(input.content);
      form.set('file', input.mimeType ? new Blob([blob], { type: input.mimeType }) : blob, input.name);
      return form;
    };
    const res = await this.request({ method: 'POST', path: '/files', body: makeForm(), idempotent: false, signal: input.signal });
    return readJson(res);
  }

  /** `PUT /files/:id/content`: new content for a file, optionally conditional. */
  async replaceContent(id: string, input: ReplaceContentInput): Promise<P.File> {
    const headers: Record<string, string> = { 'content-type': input.contentType ?? 'application/octet-stream' };
    if (input.ifMatch) headers['if-match'] = `"${input.ifMatch}"`;
    if (input.ifNoneMatch) headers['if-none-match'] = '*';
    if (input.sha256) headers['repr-digest'] = `sha-256=:${hexToBase64(input.sha256)}:`;
    const res = await this.request({ method: 'PUT', path: `/files/${enc(id)}/content`, headers, body: toBlob(input.content), idempotent: false, signal: input.signal });
    return readJson(res);
  }

  /**
   * `GET /files/:id/content`: the response, to be streamed (`res.body`); `range` like `bytes=0-99`.
   * A 302 to the store (S3_DOWNLOADS=redirect) is followed without the Authorization header; check what arrives
   * with `announcedDigest`, or with the file's `sha256` when that answers undefined.
   */
  async download(id: string, options: { range?: string; signal?: AbortSignal } = {}): Promise<Response> {
    const path = `/files/${enc(id)}/content`;
    return this.fetchContent(path, options.range, options.signal);
  }

  /**
   * As `download` (the whole content), read through Node's HTTP client: `res.body` is a Node stream
   * of Buffers, taken in at about twice the rate of fetch's web stream, for large files.
   */
  async downloadStream(id: string, options: { signal?: AbortSignal } = {}): Promise<StreamedResponse> {
    const req: HttpRequest = { method: 'GET', path: `/files/${enc(id)}/content`, idempotent: true, signal: options.signal, redirect: 'manual' };
    const res = await send(this.server, req, () => this.token, this.retry, viaNodeHttp);
    return followRedirect(res, new URL(this.server).origin, this.token, options.signal, viaNodeHttp);
  }

  /**
   * The SHA-256 (hex) the service itself announced for a content response: its `Repr-Digest`, else
   * its ETag. Undefined for a response from another origin (a presigned store URL, whose ETag is the
   * store's, not a SHA-256): check it against the file's `sha256` (metadata or change feed) instead.
   */
  announcedDigest(res: Pick<Answer, 'url' | 'headers'>): string | undefined {
    if (!res.url || new URL(res.url).origin !== new URL(this.server).origin) return undefined;
    const digest = res.headers.get('repr-digest')?.match(/sha-256=:([^:]+):/)?.[1];
    if (digest) return Buffer.from(digest, 'base64').toString('hex');
    const etag = res.headers.get('etag')?.replace(/^W\//, '').replace(/"/g, '');
    return etag && /^[0-9a-f]{64}$/.test(etag) ? etag : undefined;
  }

  private async fetchContent(path: string, range: string | undefined, signal: AbortSignal | undefined): Promise<Response> {
    const res = await this.request({ method: 'GET', path, headers: range ? { range } : {}, idempotent: true, signal, redirect: 'manual' });
    return followRedirect(res, new URL(this.server).origin, this.token, signal);
  }

  // ---- sync ----
  /** `POST /sync/ops`: opIds go as decimal strings, so no digit of a 64-bit id is lost. Safe to retry. */
  async syncOps(ops: P.SyncOp[], signal?: AbortSignal): Promise<P.SyncOpsResponse> {
    const res = await this.request({
      method: 'POST',
      path: '/sync/ops',
      body: JSON.stringify({ ops } satisfies P.SyncOpsRequest),
      headers: { 'content-type': 'application/json' },
      idempotent: true,
      signal,
    });
    return readJson(res);
  }

  changes(query: ChangesQuery = {}): Promise<P.ChangesPage> {
    const { signal, ...q } = query;
    return this.json({ method: 'GET', path: '/sync/changes', query: { ...q }, idempotent: true, signal });
  }

  /**
   * The change feed as an endless async iterator of pages: it drains what is ready, then long-polls
   * (`wait` seconds) for more. Stop it with the signal (the pending poll is aborted) or `break`.
   */
  async *feed(options: { cursor?: string; wait?: number; limit?: number; signal?: AbortSignal } = {}): AsyncGenerator<P.ChangesPage> {
    let cursor = options.cursor;
    let ready = true;
    while (!options.signal?.aborted) {
      const page = await this.changes({ cursor, limit: options.limit, wait: ready ? 0 : options.wait ?? 30, signal: options.signal });
      cursor = page.cursor;
      ready = page.hasMore;
      yield page;
    }
  }

  permissions(after = 0): Promise<P.PermissionSnapshot> {
    return this.json({ method: 'GET', path: '/sync/permissions', query: { after }, idempotent: true });
  }

  // ---- trash and versions ----
  listTrash(limit?: number, offset?: number): Promise<P.Page<P.TrashItem>> {
    return this.json({ method: 'GET', path: '/trash', query: { limit, offset }, idempotent: true });
  }

  restore(id: string): Promise<P.File | P.Folder> {
    return this.json({ method: 'POST', path: `/trash/${enc(id)}/restore`, idempotent: false });
  }

  async purge(id: string): Promise<void> {
    await this.request({ method: 'DELETE', path: `/trash/${enc(id)}`, idempotent: true });
  }

  listVersions(fileId: string, limit?: number, offset?: number): Promise<P.Page<P.Version>> {
    return this.json({ method: 'GET', path: `/files/${enc(fileId)}/versions`, query: { limit, offset }, idempotent: true });
  }

  /** A version's content; a 302 to the store is followed as for `download`. */
  downloadVersion(fileId: string, versionId: string, range?: string): Promise<Response> {
    return this.fetchContent(`/files/${enc(fileId)}/versions/${enc(versionId)}/content`, range, undefined);
  }

  restoreVersion(fileId: string, versionId: string, ifMatch?: string): Promise<P.File> {
    return this.json({
      method: 'POST',
      path: `/files/${enc(fileId)}/versions/${enc(versionId)}/restore`,
      headers: ifMatch ? { 'if-match': `"${ifMatch}"` } : {},
      idempotent: false,
    });
  }

  async deleteVersion(fileId: string, versionId: string): Promise<void> {
    await this.request({ method: 'DELETE', path: `/files/${enc(fileId)}/versions/${enc(versionId)}`, idempotent: true });
  }

  // ---- resumable uploads ----
  /** A tus upload of a file on disk; pass `uploadUrl` to resume one a crash interrupted. */
  uploadResumable(options: Omit<ResumableUploadOptions, 'server' | 'token'>): Promise<P.File> {
    if (!this.token) return Promise.reject(new ApiError(401, { code: 'UNAUTHORIZED', message: 'not signed in' }));
    return resumableUpload({ ...options, server: this.server, token: this.token });
  }

  /**
   * Terminates a tus upload (`DELETE`): the service drops its bytes and the quota it reserved. One
   * the service no longer holds (expired, finished, terminated) is no error.
   */
  async terminateUpload(url: string, signal?: AbortSignal): Promise<void> {
    const at = url.indexOf('/v1/uploads/');
    if (at < 0) return;
    try {
      await this.request({ method: 'DELETE', path: url.slice(at + 3), headers: { 'tus-resumable': '1.0.0' }, idempotent: true, signal });
    } catch (err) {
      if (!(err instanceof ApiError && (err.status === 404 || err.status === 410))) throw err;
    }
  }
}
