import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, FilesyncClient } from '../../clients/src/sdk';
import { streamingGet } from '../../clients/src/sdk/node.transport';

/**
 * The SDK's downloads through node:http (clients/src/sdk/node.transport.ts, `downloadStream`): the
 * same retries, errors, redirects and digests as its fetch requests, against a scripted server.
 */
type Script = (req: http.IncomingMessage, res: http.ServerResponse) => void;
let script: Script;
const seen: { url: string; authorization?: string }[] = [];
let server: http.Server;
let base: string;

const listen = (handler: http.RequestListener) =>
  new Promise<{ server: http.Server; url: string }>((resolve) => {
    const s = http.createServer(handler).listen(0, '127.0.0.1', () => resolve({ server: s, url: `http://127.0.0.1:${(s.address() as AddressInfo).port}` }));
  });

beforeAll(async () => {
  ({ server, url: base } = await listen((req, res) => {
    seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
    script(req, res);
  }));
});
afterAll(() => new Promise((r) => server.close(r)));
beforeEach(() => (seen.length = 0));

const bodyOf = async (body: AsyncIterable<Buffer>) => {
  const parts: Buffer[] = [];
  for await (const part of body) parts.push(part);
  return Buffer.concat(parts);
};
const client = () => new FilesyncClient({ server: base, token: 'secret-token', retry: { maxElapsedMs: 5000, maxNetworkElapsedMs: 2000, baseDelayMs: 10, maxDelayMs: 50 } });

test('a download streams the body in Buffers, with the digest the service announced; 503 is retried after Retry-After', async () => {
  const bytes = randomBytes(3 * 1024 * 1024 + 7);
  const digest = createHash('sha256').update(bytes).digest();
  let calls = 0;
  script = (_req, res) => {
    if (calls++ === 0) return void res.writeHead(503, { 'retry-after': '0', 'content-type': 'application/json' }).end('{"error":{"code":"UNAVAILABLE","message":"busy"}}');
    res.writeHead(200, { 'content-length': String(bytes.length), 'repr-digest': `sha-256=:${digest.toString('base64')}:` }).end(bytes);
  };
  const sdk = client();
  const res = await sdk.downloadStream('abc');
  expect(res.status).toBe(200);
  expect((await bodyOf(res.body)).equals(bytes)).toBe(true);
  expect(sdk.announcedDigest(res)).toBe(digest.toString('hex'));
  expect(seen.map((s) => [s.url, s.authorization])).toEqual([
    ['/v1/files/abc/content', 'Bearer secret-token'],
    ['/v1/files/abc/content', 'Bearer secret-token'],
  ]);
});

test('an error answer is an ApiError with the contract code, the body read', async () => {
  script = (_req, res) => void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"NOT_FOUND","message":"no such file"}}');
  const err = await client().downloadStream('gone').catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe('NOT_FOUND');
  expect((err as ApiError).status).toBe(404);
});

test('a redirect to another origin is followed without the Authorization header, and no digest is taken from there', async () => {
  const other = await listen((req, res) => {
    seen.push({ url: `other ${req.url}`, authorization: req.headers.authorization });
    res.writeHead(200, { etag: `"${'0'.repeat(64)}"` }).end('from the store');
  });
  try {
    script = (_req, res) => void res.writeHead(302, { location: `${other.url}/bucket/key?sig=1` }).end();
    const sdk = client();
    const res = await sdk.downloadStream('abc');
    expect((await bodyOf(res.body)).toString()).toBe('from the store');
    expect(sdk.announcedDigest(res)).toBeUndefined();
    expect(seen).toEqual([
      { url: '/v1/files/abc/content', authorization: 'Bearer secret-token' },
      { url: 'other /bucket/key?sig=1', authorization: undefined },
    ]);
  } finally {
    await new Promise((r) => other.server.close(r));
  }
});

test('an abort, or a body that stops arriving, ends the read with an error rather than a short body', async () => {
  script = (_req, res) => {
    res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) });
    res.write(randomBytes(64 * 1024));
  };
  const aborting = new AbortController();
  const res = await client().downloadStream('abc', { signal: aborting.signal });
  const reading = bodyOf(res.body);
  aborting.abort();
  await expect(reading).rejects.toThrow();

  const stalled = await streamingGet(new URL(`${base}/v1/files/abc/content`), {}, undefined, 200);
  await expect(bodyOf(stalled.body)).rejects.toThrow(/aborted|nothing received/);
});
