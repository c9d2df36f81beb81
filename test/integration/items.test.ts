import { Api } from '../support/client';
import { startStack, type TestStack } from '../support/stack';

/** GET /v1/items: one folder's children, folders first, sorted, paged. */
let stack: TestStack;
let api: Api;
let opId = 1;

const hex = (n: number) => n.toString(16).padStart(32, '0');
let nextId = 0xa000;
const newId = () => hex(nextId++);

async function mkdir(name: string, parentId: string | null = null): Promise<string> {
  const id = newId();
  const res = await api.post('/v1/sync/ops', { ops: [{ opId: opId++, type: 'create', resourceId: id, payload: { resourceType: 'folder', name, parentId } }] });
  expect(res.body.failed).toBeNull();
  return id;
}

async function upload(name: string, content: string, folderId = ''): Promise<string> {
  const res = await api.upload(folderId ? { folderId } : {}, { name, content });
  expect(res.status).toBe(201);
  return res.body.id;
}

const names = (res: { body: { items: Array<{ name: string }> } }) => res.body.items.map((i) => i.name);

beforeAll(async () => {
  stack = await startStack();
  api = (await stack.admin.createUser('lister')).api;
});

afterAll(async () => {
  await stack?.close();
});

test('the root lists folders first, then files, each by code point after NFC, with both kinds in total', async () => {
  await mkdir('zeta');
  await mkdir('Alpha');
  await upload('b.txt', 'bb');
  await upload('a', '1');
  await upload('a ', '55555');
  await upload('\u00e9t\u00e9.txt', '333');
  await upload('Z.txt', '4444');
  const res = await api.get('/v1/items');
  expect(res.status).toBe(200);
  expect(names(res)).toEqual(['Alpha', 'zeta', 'Z.txt', 'a', 'a ', 'b.txt', '\u00e9t\u00e9.txt']);
  expect(res.body).toMatchObject({ total: 7, limit: 50, offset: 0 });
  const folder = res.body.items[0];
  expect(Object.keys(folder).sort()).toEqual(['createdAt', 'id', 'name', 'type', 'updatedAt']);
  expect(folder.type).toBe('folder');
  const file = res.body.items.find((i: { name: string }) => i.name === 'b.txt');
  expect(file).toEqual({ type: 'file', id: expect.any(String), name: 'b.txt', size: 2, mimeType: 'text/plain', createdAt: expect.any(String), updatedAt: expect.any(String) });
});

test('pages run across the folders into the files without overlap or gap', async () => {
  const pages: string[] = [];
  for (let offset = 0; offset < 7; offset += 3) pages.push(...names(await api.get(`/v1/items?limit=3&offset=${offset}`)));
  expect(pages).toEqual(['Alpha', 'zeta', 'Z.txt', 'a', 'a ', 'b.txt', '\u00e9t\u00e9.txt']);
  const past = await api.get('/v1/items?offset=50');
  expect(past.body).toEqual({ items: [], total: 7, limit: 50, offset: 50 });
});

test('sorting by size keeps folders first in name order; descending name order reverses both kinds', async () => {
  expect(names(await api.get('/v1/items?sort=size&order=desc'))).toEqual(['Alpha', 'zeta', 'a ', 'Z.txt', '\u00e9t\u00e9.txt', 'b.txt', 'a']);
  expect(names(await api.get('/v1/items?sort=size'))).toEqual(['Alpha', 'zeta', 'a', 'b.txt', '\u00e9t\u00e9.txt', 'Z.txt', 'a ']);
  expect(names(await api.get('/v1/items?order=desc'))).toEqual(['zeta', 'Alpha', '\u00e9t\u00e9.txt', 'b.txt', 'a ', 'a', 'Z.txt']);
  const byTime = names(await api.get('/v1/items?sort=updatedAt'));
  expect(byTime.slice(0, 2)).toEqual(['zeta', 'Alpha']);
});

test('a subfolder lists its own children; deleted children are gone', async () => {
  const parent = await mkdir('parent');
  await mkdir('child', parent);
  const gone = await upload('gone.txt', 'x', parent);
  await upload('kept.txt', 'y', parent);
  expect((await api.delete(`/v1/files/${gone}`)).status).toBe(200);
  const res = await api.get(`/v1/items?folderId=${parent}`);
  expect(names(res)).toEqual(['child', 'kept.txt']);
  expect(res.body.total).toBe(2);
});

test('a file id, a malformed id, an unknown or another user\'s folder answer 404; bad parameters 400', async () => {
  const file = await upload('plain.txt', 'p');
  expect((await api.get(`/v1/items?folderId=${file}`)).status).toBe(404);
  expect((await api.get(`/v1/items?folderId=${hex(0xdead)}`)).status).toBe(404);
  const theirs = newId();
  await stack.admin.post('/v1/sync/ops', { ops: [{ opId: 1, type: 'create', resourceId: theirs, payload: { resourceType: 'folder', name: 'private' } }] });
  const res = await api.get(`/v1/items?folderId=${theirs}`);
  expect(res.status).toBe(404);
  expect(res.body.error.code).toBe('NOT_FOUND');
  expect((await api.get('/v1/items?sort=created')).status).toBe(400);
  expect((await api.get('/v1/items?order=up')).status).toBe(400);
  expect((await api.get('/v1/items?limit=0')).status).toBe(400);
  for (const malformed of ['nothex', 'A'.repeat(32), '%2e%2e']) {
    const bad = await api.get(`/v1/items?folderId=${malformed}`);
    expect(bad.status).toBe(404);
    expect(bad.body.error.code).toBe('NOT_FOUND');
  }
  expect((await new Api(stack.gateway.baseUrl).get('/v1/items')).status).toBe(401);
});
