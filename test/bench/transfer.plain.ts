import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomFillSync } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { HttpClient } from './http.client';

/** Chunk size of every body the bench sends, service and ceilings alike. */
export const SEND_CHUNK = 1024 * 1024;

export async function writeRandomFile(file: string, bytes: number): Promise<void> {
  const chunk = Buffer.alloc(1024 * 1024);
  const out = createWriteStream(file);
  for (let written = 0; written < bytes; written += chunk.length) {
    randomFillSync(chunk);
    const part = chunk.subarray(0, Math.min(chunk.length, bytes - written));
    if (!out.write(part)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}

/** A multipart body streamed from disk: the part header, the file's bytes, the closing boundary. */
export function multipart(file: string, name: string, bytes: number): { body: Readable; headers: Record<string, string | number> } {
  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* parts() {
    yield head;
    for await (const chunk of createReadStream(file, { highWaterMark: SEND_CHUNK })) yield chunk as Buffer;
    yield tail;
  }
  return {
    body: Readable.from(parts()),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + bytes + tail.length },
  };
}

/**
 * The plain-HTTP ceilings: a bare node:http server in a process of its own, like the gateway, with no
 * framework, no multipart and no database, doing the work the service's path cannot skip. `?chunk=`
 * picks the stream chunk size, so the bench can take the fastest of the stock settings and large chunks:
 * - POST receives the raw body, hashes every byte with SHA-256 (the gateway's ETag and digests) and
 *   writes it to a new file (createWriteStream with that highWaterMark), then answers with the digest;
 * - GET streams the file, or the one range `bytes=a-b` asked for, into the response (createReadStream),
 *   with the headers the gateway sends with content (same names, values of the same length), so the
 *   ceiling moves as many header bytes as the service does; with `id=` (and a floor, below) only
 *   after the token and the row were checked.
 */
const PLAIN_SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const crypto = require('node:crypto');
const { Transform, pipeline } = require('node:stream');
const CONTENT_HEADERS = {
  'x-request-id': '0123456789abcdef0123456789abcdef',
  'etag': '"' + 'a'.repeat(64) + '"',
  'repr-digest': 'sha-256=:' + 'A'.repeat(43) + '=:',
  'x-content-type-options': 'nosniff',
  'cache-control': 'private, no-cache',
  'content-disposition': 'attachment; filename="bench.bin"',
  'content-type': 'application/octet-stream',
  'accept-ranges': 'bytes',
};
// The floor of an authenticated read: the token checked as the service checks it, the file's row read
// with one SELECT of the caller's file, then the same streaming.
const floor = process.env.FLOOR_DATABASE_URL
  ? { key: crypto.createSecretKey(Buffer.from(process.env.FLOOR_JWT_SECRET, 'utf8')), pool: require('mysql2').createPool({ uri: process.env.FLOOR_DATABASE_URL, connectionLimit: 4 }) }
  : undefined;
function authorize(req, q, done) {
  let claims;
  try {
    claims = require('jsonwebtoken').verify(/^Bearer (.+)$/.exec(req.headers.authorization || '')[1], floor.key, { algorithms: ['HS256'] });
  } catch { done(401); return; }
  floor.pool.query(
    'SELECT storage_key, size_bytes, content_sha256 FROM resources WHERE user_id = ? AND id = ? AND type = ? AND deleted_at IS NULL',
    [claims.sub, q.get('id'), 'file'],
    (err, rows) => done(err ? 500 : rows.length === 1 ? 0 : 404),
  );
}
const server = http.createServer((req, res) => {
  const q = new URL(req.url, 'http://x').searchParams;
  if (q.has('id') && floor) {
    q.delete('id');
    authorize(req, new URL(req.url, 'http://x').searchParams, (status) => {
      if (status) { res.writeHead(status); res.end(); return; }
      serve(req, res, q);
    });
    return;
  }
  serve(req, res, q);
});
function serve(req, res, q) {
  const file = q.get('path');
  const chunk = Number(q.get('chunk')) || undefined;
  if (req.method === 'POST') {
    const hash = crypto.createHash('sha256');
    const hashing = new Transform({ transform(c, _e, done) { hash.update(c); done(null, c); } });
    pipeline(req, hashing, fs.createWriteStream(file, { flags: 'wx', highWaterMark: chunk }), (err) => {
      if (err) { res.writeHead(500); res.end(); return; }
      res.writeHead(201, { etag: '"' + hash.digest('hex') + '"' });
      res.end();
    });
    return;
  }
  fs.stat(file, (err, st) => {
    if (err) { res.writeHead(404); res.end(); return; }
    for (const [name, value] of Object.entries(CONTENT_HEADERS)) res.setHeader(name, value);
    const range = /^bytes=(\\d+)-(\\d+)$/.exec(req.headers.range || '');
    if (range) {
      const start = Number(range[1]);
      const end = Math.min(Number(range[2]), st.size - 1);
      res.writeHead(206, { 'content-length': end - start + 1, 'content-range': 'bytes ' + start + '-' + end + '/' + st.size });
      fs.createReadStream(file, { start, end, highWaterMark: chunk }).pipe(res);
      return;
    }
    res.writeHead(200, { 'content-length': st.size });
    fs.createReadStream(file, { highWaterMark: chunk }).pipe(res);
  });
}
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

export interface PlainServer {
  child: ChildProcess;
  client: HttpClient;
}

/**
 * `floor`: the service's database and token secret, so that a GET with `?id=<file id>` and the
 * caller's bearer token first verifies the token and reads the file's row, as any authenticated read
 * must, before it streams.
 */
export async function startPlainServer(floor?: { databaseUrl: string; jwtSecret: string }): Promise<PlainServer> {
  const env = floor ? { ...process.env, FLOOR_DATABASE_URL: floor.databaseUrl, FLOOR_JWT_SECRET: floor.jwtSecret } : process.env;
  const child = spawn(process.execPath, ['-e', PLAIN_SERVER], { stdio: ['ignore', 'pipe', 'inherit'], env });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (code) => reject(new Error(`plain HTTP server exited (${code})`)));
  });
  return { child, client: new HttpClient(`http://127.0.0.1:${port}`) };
}

/** The stream chunk sizes the plain server is measured with: Node's defaults, then 1 MiB. */
export const PLAIN_CHUNKS = [
  { label: 'stock', value: 0 },
  { label: '1 MiB', value: 1024 * 1024 },
];
