import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import jwt from 'jsonwebtoken';
import { newId } from '../../shared/ids';
import { DerivedData } from '../../shared/db/derived/derived.hooks';
import type { Db } from '../../shared/db/knex';
import type { ApiResponse } from './client';
import { JWT_SECRET } from './harness';

/** Asserts the API's error shape: status, code, a message, and nothing but an optional `details`. */
export function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: { error: expect.objectContaining({ code, message: expect.any(String) }) },
  });
  expect(Object.keys(res.body.error as object).filter((k) => !['code', 'message', 'details'].includes(k))).toEqual([]);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
}

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const HEX32 = /^[0-9a-f]{32}$/;

export const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

export interface ResourceSeed {
  id?: string;
  userId: string;
  type?: 'file' | 'folder';
  name: string;
  parentId?: string | null;
  size?: number;
  mimeType?: string | null;
  createdAt?: Date;
  updatedAt?: Date;
  deletedAt?: Date | null;
}

/**
 * Inserts a resource row directly (the generated columns parent_key, name_key and alive are left to
 * the database) and adds it to the derived data as the service's writes do. Used to arrange folders and files with exact timestamps and sizes.
 */
export async function insertResource(db: Db, seed: ResourceSeed): Promise<string> {
  const id = seed.id ?? newId();
  const type = seed.type ?? 'file';
  const createdAt = seed.createdAt ?? new Date();
  await db('resources').insert({
    id,
    user_id: seed.userId,
    parent_id: seed.parentId ?? null,
    type,
    name: seed.name,
    size_bytes: type === 'file' ? (seed.size ?? 0) : 0,
    mime_type: type === 'file' ? (seed.mimeType === undefined ? 'text/plain' : seed.mimeType) : null,
    extension: null,
    storage_key: null,
    content_sha256: null,
    created_at: createdAt,
    updated_at: seed.updatedAt ?? createdAt,
    deleted_at: seed.deletedAt ?? null,
  });
  await DerivedData.of(db).activated(seed.userId, [id]);
  return id;
}

/** Soft-deletes a row directly at `at`, keeping counts and search index exact as the service does. */
export async function markDeleted(db: Db, userId: string, id: string, at: Date): Promise<void> {
  await DerivedData.of(db).deactivating(userId, [id]);
  await db('resources').where({ id }).update({ deleted_at: at });
}

export const insertFolder = (db: Db, userId: string, name: string, parentId: string | null = null, extra: Partial<ResourceSeed> = {}) =>
  insertResource(db, { ...extra, userId, name, parentId, type: 'folder' });

export const insertFile = (db: Db, userId: string, name: string, parentId: string | null = null, extra: Partial<ResourceSeed> = {}) =>
  insertResource(db, { ...extra, userId, name, parentId, type: 'file' });

/** Every regular file under `dir`, hidden folders such as .staging included, as sorted relative paths. */
export async function listFilesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (current: string) => {
    const entries = await fs.readdir(current, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) await walk(full);
      else out.push(path.relative(dir, full));
    }
  };
  await walk(dir);
  return out.sort();
}

export async function countRows(db: Db, table: string): Promise<number> {
  const row = await db(table).count<{ n: number | string }[]>({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

/** Polls until `check` holds or the deadline passes; returns the last value of `check`. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000, stepMs = 25): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** A multipart/form-data body built by hand, for parts fetch's FormData cannot express. */
export interface RawPart {
  name: string;
  filename?: string;
  contentType?: string;
  content: Buffer | string;
}

export function multipartBody(parts: RawPart[], boundary = `----filesync${newId()}`): { boundary: string; body: Buffer } {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`, 'utf8'), Buffer.isBuffer(p.content) ? p.content : Buffer.from(p.content, 'utf8'), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { boundary, body: Buffer.concat(chunks) };
}

/**
 * Starts a multipart upload with node:http, sends only the first `sendBytes` of the body and returns
 * a handle to cut the connection; the server sees a client vanishing mid-upload.
 */
export function startPartialUpload(baseUrl: string, token: string, parts: RawPart[], sendBytes: number): { abort: () => void } {
  const { boundary, body } = multipartBody(parts);
  const url = new URL('/v1/files', baseUrl);
  const req = http.request({
    host: url.hostname,
    port: url.port,
    method: 'POST',
    path: url.pathname,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(body.length),
    },
  });
  req.on('error', () => undefined);
  req.on('response', (res) => res.resume());
  req.write(body.subarray(0, sendBytes));
  return { abort: () => req.destroy() };
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Tokens crafted outside the service, to probe how strictly it verifies them (claims are signed as given, plus iat when absent). */
export const craft = {
  /** HS256 with the service's secret: a valid token unless the claims are wrong. */
  hs256(claims: Record<string, unknown>, secret = JWT_SECRET): string {
    return jwt.sign(claims, secret, { algorithm: 'HS256' });
  },
  /** HS256 with the service's secret and no `iat` claim at all. */
  hs256WithoutIat(claims: Record<string, unknown>): string {
    return jwt.sign(claims, JWT_SECRET, { algorithm: 'HS256', noTimestamp: true });
  },
  hs512(claims: Record<string, unknown>): string {
    return jwt.sign(claims, JWT_SECRET, { algorithm: 'HS512' });
  },
  unsigned(claims: Record<string, unknown>): string {
    return `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims)}.`;
  },
  /** The token's signature kept, its payload replaced. */
  withPayload(token: string, claims: Record<string, unknown>): string {
    const [header, , signature] = token.split('.');
    return `${header}.${b64url(claims)}.${signature}`;
  },
};

export const nowSeconds = () => Math.floor(Date.now() / 1000);
