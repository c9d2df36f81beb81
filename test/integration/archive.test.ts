import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { crc32 } from 'node:zlib';
import { ContentCrcRepository } from '../../shared/content/content-crc.repository';
import { ContentCrcSweeper } from '../../shared/content/content-crc.sweeper';
import { Api } from '../support/client';
import { makeFolders, unzipEntries } from '../support/links';
import { startStack, type TestStack } from '../support/stack';

/**
 * GET /v1/archive?ids=…: one ZIP of any of the caller's files and folders, paths relative to the
 * selection, only the caller's items, at most ARCHIVES_PER_USER streaming per user and gateway.
 */
let stack: TestStack;
let api: Api;
let other: Api;
let folders: Record<string, string>;
const files: Record<string, string> = {};

async function upload(path: string, content: string | Buffer): Promise<string> {
  const parts = path.split('/');
  const name = parts.pop()!;
  const folderId = parts.length ? folders[`${parts.join('/')}/`]! : undefined;
  const res = await api.upload(folderId ? { folderId } : {}, { name, content });
  expect(res.status).toBe(201);
  files[path] = res.body.id;
  return res.body.id;
}

const archive = (ids: string[], as: Api = api) => fetch(`${as.baseUrl}/v1/archive?ids=${ids.join(',')}`, { headers: { authorization: `Bearer ${as.token}` } });

beforeAll(async () => {
  stack = await startStack({ ARCHIVES_PER_USER: '1' });
  api = (await stack.admin.createUser('archiver')).api;
  other = (await stack.admin.createUser('outsider')).api;
  folders = await makeFolders(api, ['photos/', 'photos/2024/', 'docs/', 'docs/old/', 'empty/']);
  await upload('photos/a.jpg', 'jpeg a');
  await upload('photos/2024/b.jpg', 'jpeg b');
  await upload('docs/report.pdf', 'report new');
  await upload('docs/old/report.pdf', 'report old');
  await upload('notes.txt', 'notes');
  await upload('photos/gone.txt', 'deleted');
  expect((await api.delete(`/v1/files/${files['photos/gone.txt']}`)).status).toBe(200);
});

afterAll(async () => {
  await stack?.close();
});

test('folders come as name/..., files at the top, deleted files left out; one folder is named after it', async () => {
  const res = await archive([folders['photos/']!, files['notes.txt']!, files['docs/old/report.pdf']!, files['docs/report.pdf']!]);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/zip');
  expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="?files.zip"?/);
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  // Two selected files of one name from different folders keep both, the second renamed.
  expect(await unzipEntries(Buffer.from(await res.arrayBuffer()))).toEqual({
    'notes.txt': 'notes',
    'report.pdf': 'report old',
    'report (2).pdf': 'report new',
    'photos/a.jpg': 'jpeg a',
    'photos/2024/b.jpg': 'jpeg b',
  });
  const one = await archive([folders['docs/']!]);
  expect(one.headers.get('content-disposition')).toMatch(/^attachment; filename="?docs.zip"?/);
  expect(await unzipEntries(Buffer.from(await one.arrayBuffer()))).toEqual({ 'docs/report.pdf': 'report new', 'docs/old/report.pdf': 'report old' });
});

test('content of 64 KiB or more has its CRC-32 recorded as it is written: its entry carries it in the local header, with no descriptor', async () => {
  const big = randomBytes(100 * 1024);
  const [bigFolder] = Object.values(await makeFolders(api, ['crc/'], 100));
  const res = await api.upload({ folderId: bigFolder }, { name: 'big.bin', content: big });
  expect(res.status).toBe(201);
  const zip = Buffer.from(await (await archive([res.body.id])).arrayBuffer());
  expect(zip.readUInt32LE(0)).toBe(0x04034b50);
  // Bit 11 (UTF-8 name) only: the CRC and sizes are in the header, not after the bytes.
  expect(zip.readUInt16LE(6)).toBe(0x0800);
  expect(zip.readUInt32LE(14)).toBe(crc32(big));
  expect(zip.readUInt32LE(18)).toBe(big.length);
  // A small file's CRC is taken as the archive reads it, and follows its bytes (bit 3).
  const small = Buffer.from(await (await archive([files['notes.txt']!])).arrayBuffer());
  expect(small.readUInt16LE(6)).toBe(0x0808);
  expect(await unzipEntries(small)).toEqual({ 'notes.txt': 'notes' });

  // The record goes once no file or version has those bytes any more, by the maintenance sweep.
  const crcs = new ContentCrcRepository(stack.env.db);
  const digest = createHash('sha256').update(big).digest('hex');
  expect(await crcs.page(digest.slice(0, 63), 10)).toContain(digest);
  expect((await api.delete(`/v1/files/${res.body.id}`)).status).toBe(200);
  await new ContentCrcSweeper(crcs).sweep();
  expect(await crcs.page(digest.slice(0, 63), 10)).toContain(digest); // in the trash, still held
  expect((await api.delete(`/v1/trash/${res.body.id}`)).status).toBe(204);
  const { crcsRemoved } = await new ContentCrcSweeper(crcs).sweep();
  expect(crcsRemoved).toBeGreaterThanOrEqual(1);
  expect(await crcs.page(digest.slice(0, 63), 10)).not.toContain(digest);
});

test('another user\'s item, a deleted one or a malformed id is 404 and sends nothing; bad lists 400; no session 401', async () => {
  for (const ids of [[folders['photos/']!], [files['photos/gone.txt']!], ['nothex'], [files['notes.txt']!, 'f'.repeat(32)]]) {
    const res = await archive(ids, ids[0] === folders['photos/'] ? other : api);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/json/);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
  }
  const tooMany = Array.from({ length: 201 }, (_, i) => i.toString(16).padStart(32, '0'));
  for (const query of ['', '?ids=', '?ids=,', `?ids=${tooMany.join(',')}`]) {
    const res = await api.get(`/v1/archive${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
  }
  expect((await new Api(api.baseUrl).get(`/v1/archive?ids=${files['notes.txt']}`)).status).toBe(401);
});

test('a browser\'s session cookie downloads it with a plain GET', async () => {
  const signIn = await fetch(`${api.baseUrl}/v1/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
    body: JSON.stringify({ username: 'archiver', password: 'user-password-1' }),
  });
  expect(signIn.status).toBe(200);
  const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
  const res = await fetch(`${api.baseUrl}/v1/archive?ids=${folders['empty/']},${files['notes.txt']}`, { headers: { cookie } });
  expect(res.status).toBe(200);
  expect(await unzipEntries(Buffer.from(await res.arrayBuffer()))).toEqual({ 'notes.txt': 'notes' });
});

test('one archive over ARCHIVES_PER_USER waits, then 503 with Retry-After; another user is not held up', async () => {
  await upload('big.bin', randomBytes(24 * 1024 * 1024));
  const first = await new Promise<{ status: number; cut: () => void }>((resolve, reject) => {
    const req = http.get(`${api.baseUrl}/v1/archive?ids=${files['big.bin']}`, { headers: { authorization: `Bearer ${api.token}` } }, (res) => {
      res.pause();
      resolve({ status: res.statusCode!, cut: () => req.destroy() });
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
  });
  expect(first.status).toBe(200);
  try {
    const mine = await otherUpload();
    expect((await archive([mine], other)).status).toBe(200);
    const refused = await archive([files['notes.txt']!]);
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('SERVICE_UNAVAILABLE');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  } finally {
    first.cut();
  }
});

async function otherUpload(): Promise<string> {
  const res = await other.upload({}, { name: 'theirs.txt', content: 'theirs' });
  expect(res.status).toBe(201);
  return res.body.id;
}
