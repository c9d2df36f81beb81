import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { DerivedRepair } from '../../shared/db/derived/derived.repair';
import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import type { TestEnv } from '../support/harness';
import { startStack, type TestStack } from '../support/stack';

let env: TestEnv;
let stack: TestStack;
let api: Api;
let userId: string;
let nextOpId = 1;

const create = (resourceId: string, resourceType: 'file' | 'folder', name: string, parentId: string | null = null) => ({
  opId: nextOpId++,
  type: 'create',
  resourceId,
  payload: { resourceType, name, parentId, ...(resourceType === 'file' ? { size: 3 } : {}) },
});
const move = (resourceId: string, parentId: string | null) => ({ opId: nextOpId++, type: 'move', resourceId, payload: { parentId } });
const rename = (resourceId: string, name: string) => ({ opId: nextOpId++, type: 'update', resourceId, payload: { name } });
const remove = (resourceId: string) => ({ opId: nextOpId++, type: 'delete', resourceId });

async function sync(ops: unknown[]): Promise<void> {
  const res = await api.post('/v1/sync/ops', { ops });
  expect(res.status).toBe(200);
  expect(res.body.failed).toBeNull();
}

/** `total` of the listing of a folder (null: the root), and the active files actually in it. */
async function totals(folderId: string | null): Promise<{ listed: number; actual: number }> {
  const res = await api.get(`/v1/files${folderId ? `?folderId=${folderId}` : ''}`);
  expect(res.status).toBe(200);
  const actual = await env.db('resources').where({ user_id: userId, parent_key: folderId ?? '', type: 'file', alive: 1 }).count({ n: '*' });
  return { listed: res.body.total, actual: Number(actual[0]!.n) };
}

async function expectExact(folders: Array<string | null>, counts: number[]): Promise<void> {
  const seen = await Promise.all(folders.map(totals));
  expect(seen.map((s) => s.listed)).toEqual(counts);
  expect(seen.map((s) => s.actual)).toEqual(counts);
  const report = await new DerivedRepair(env.db).run({ fix: false });
  expect(report).toMatchObject({ counts: [], index: [] });
}

const searchNames = async (q: string) => {
  const res = await api.get(`/v1/files/search?q=${encodeURIComponent(q)}`);
  expect(res.status).toBe(200);
  expect(res.body.total).toBe(res.body.items.length);
  return res.body.items.map((i: { name: string }) => i.name);
};

beforeAll(async () => {
  stack = await startStack();
  env = stack.env;
  ({ api, userId } = await stack.admin.createUser('deriver'));
});

afterAll(async () => {
  await stack?.close();
});

describe('per-folder file counts', () => {
  test('stay exact when a deleted folder is restored from the trash, and its files are found by search again', async () => {
    const [box, inner] = [newId(), newId()];
    const files = [newId(), newId(), newId()];
    await sync([create(box, 'folder', 'restore-box'), create(inner, 'folder', 'restore-inner', box)]);
    await sync([create(files[0]!, 'file', 'restorable-a', box), create(files[1]!, 'file', 'restorable-b', inner), create(files[2]!, 'file', 'restorable-c', inner)]);
    await sync([remove(box)]);
    expect(await new DerivedRepair(env.db).run({ fix: false })).toMatchObject({ counts: [], index: [] });
    expect(await searchNames('restorable')).toEqual([]);

    expect((await api.post(`/v1/trash/${box}/restore`)).status).toBe(200);

    await expectExact([box, inner], [1, 2]);
    expect(await searchNames('restorable')).toEqual(['restorable-a', 'restorable-b', 'restorable-c']);
  });

  test('stay exact through sync creates, moves, renames, deletes of files and subtrees, uploads and the delete endpoint', async () => {
    const [a, b, sub] = [newId(), newId(), newId()];
    const files = Array.from({ length: 6 }, () => newId());
    await sync([create(a, 'folder', 'A-cnt'), create(b, 'folder', 'B-cnt'), create(sub, 'folder', 'sub-cnt', a)]);
    await sync([
      create(files[0]!, 'file', 'f0-cnt', a),
      create(files[1]!, 'file', 'f1-cnt', a),
      create(files[2]!, 'file', 'f2-cnt', sub),
      create(files[3]!, 'file', 'f3-cnt', sub),
      create(files[4]!, 'file', 'f4-cnt', null),
      create(files[5]!, 'file', 'f5-cnt', b),
    ]);
    await expectExact([null, a, b, sub], [1, 2, 1, 2]);

    await sync([move(files[0]!, b), move(files[4]!, sub), rename(files[1]!, 'f1-renamed-cnt')]);
    await expectExact([null, a, b, sub], [0, 1, 2, 3]);

    // A folder moves with its files: their folder's count stays, the parents count no file of it.
    await sync([move(sub, b)]);
    await expectExact([null, a, b, sub], [0, 1, 2, 3]);

    const uploaded = await api.upload({ folderId: a }, { name: 'up-cnt.txt', content: 'abc' });
    expect(uploaded.status).toBe(201);
    await api.upload({}, { name: 'root-up-cnt.txt', content: 'abc' });
    await expectExact([null, a, b, sub], [1, 2, 2, 3]);

    expect((await api.delete(`/v1/files/${uploaded.body.id}`)).status).toBe(200);
    await sync([remove(files[5]!)]);
    await expectExact([null, a, b, sub], [1, 1, 1, 3]);

    // Deleting B deletes sub with it: every count of the subtree goes to 0.
    await sync([remove(b)]);
    await expectExact([null, a], [1, 1]);
    expect((await api.get(`/v1/files/search?q=cnt`)).body.total).toBe(2);
  });

  test('stay exact when one batch creates, moves, renames and deletes the same files', async () => {
    const [a, b, f, g, h] = [newId(), newId(), newId(), newId(), newId()];
    await sync([
      create(a, 'folder', 'A-one'),
      create(b, 'folder', 'B-one'),
      create(f, 'file', 'f-one', a),
      move(f, b),
      rename(f, 'f-one-renamed'),
      create(g, 'file', 'g-one', a),
      remove(g),
      create(h, 'file', 'h-one', a),
      rename(h, 'h-one-2'),
      rename(h, 'h-one-3'),
      move(h, null),
      move(h, b),
    ]);
    await expectExact([a, b], [0, 2]);
    expect(await searchNames('-one')).toEqual(['f-one-renamed', 'h-one-3']);

    // Files counted before the batch, moved and renamed twice within it.
    await sync([move(f, a), rename(f, 'f-one-x'), move(f, b), move(f, a), rename(f, 'f-one-y'), remove(h)]);
    await expectExact([a, b], [1, 0]);
    expect(await searchNames('-one')).toEqual(['f-one-y']);
  });

  test('a rename or move that fails on a name clash, after ops that commit, leaves counts and index exact', async () => {
    const [x, y, z, w, dir] = [newId(), newId(), newId(), newId(), newId()];
    await sync([create(dir, 'folder', 'dir-clash'), create(x, 'file', 'same-clash'), create(y, 'file', 'same-clash', dir)]);
    const rootBefore = (await totals(null)).actual;

    const moved = await api.post('/v1/sync/ops', { ops: [create(z, 'file', 'z-clash'), move(y, null)] });
    expect(moved.body.failed?.error.code).toBe('NAME_CONFLICT');
    const renamed = await api.post('/v1/sync/ops', { ops: [create(w, 'file', 'w-clash'), rename(x, 'z-clash')] });
    expect(renamed.body.failed?.error.code).toBe('NAME_CONFLICT');

    await expectExact([null, dir], [rootBefore + 2, 1]);
    expect(await searchNames('same-clash')).toEqual(['same-clash', 'same-clash']);
    expect(await searchNames('z-clash')).toEqual(['z-clash']);
  });
});

describe('search index', () => {
  test('follows renames and deletes', async () => {
    const [x, y] = [newId(), newId()];
    await sync([create(x, 'file', 'Alpaca-idx.txt'), create(y, 'file', 'Llama-idx.txt')]);
    expect(await searchNames('alpaca-IDX')).toEqual(['Alpaca-idx.txt']);

    await sync([rename(x, 'Vicuna-idx.txt')]);
    expect(await searchNames('alpaca-idx')).toEqual([]);
    expect(await searchNames('VICUNA')).toEqual(['Vicuna-idx.txt']);

    await sync([remove(y)]);
    expect(await searchNames('llama-idx')).toEqual([]);
    expect(await searchNames('-idx')).toEqual(['Vicuna-idx.txt']);
  });

  test('one batch of names of every length is indexed whole: the longest name to its last trigram, short ones not at all', async () => {
    const box = newId();
    const longest = `${'w'.repeat(240)}-Tail-len-END`;
    const names = ['ab', 'len', 'aaaa-len', 'Ωmega-lén-ü', longest, `${'é'.repeat(200)}-len-utf`];
    expect(longest.length).toBe(253);
    await sync([create(box, 'folder', 'len-box'), ...names.map((name, i) => create(newId(), 'file', name, i % 2 ? box : null))]);
    await expectExact([null, box], [(await totals(null)).actual, 3]);
    expect(await searchNames('tail-LEN-end')).toEqual([longest]);
    expect(await searchNames('n-end')).toEqual([longest]);
    expect(await searchNames('LÉN-Ü')).toEqual(['Ωmega-lén-ü']);
    expect(await searchNames('ééé-len-UTF')).toEqual([`${'é'.repeat(200)}-len-utf`]);
    expect(await searchNames('aaa')).toEqual(['aaaa-len']);
    const indexed = await env.db('search_grams').where({ user_id: userId }).whereIn('name', names).select('name');
    const perName = new Map<string, number>();
    for (const r of indexed as Array<{ name: string }>) perName.set(r.name, (perName.get(r.name) ?? 0) + 1);
    expect(perName.get('ab')).toBeUndefined();
    expect(perName.get('len')).toBe(1);
    // 'aaaa-len': aaa, aa-, a-l, -le, len (the repeated 'aaa' once).
    expect(perName.get('aaaa-len')).toBe(5);
  });

  test('terms shorter than a trigram scan, and agree with the index for longer ones', async () => {
    for (const name of ['q1-short', 'Q1-SHORT-2', 'zq-short']) await api.upload({}, { name, content: 'x' });
    expect(await searchNames('q1')).toEqual(['Q1-SHORT-2', 'q1-short']);
    expect(await searchNames('Q')).toEqual(expect.arrayContaining(['Q1-SHORT-2', 'q1-short', 'zq-short']));
    expect(await searchNames('q1-')).toEqual(['Q1-SHORT-2', 'q1-short']);
  });

  test.each([
    ['%', '10%-wild', ['10%-wild', '10x-wild', '1-wild']],
    ['_', 'p_q-wild', ['p_q-wild', 'pxq-wild', 'pq-wild']],
    ['\\', 'r\\s-wild', ['r\\s-wild', 'rs-wild']],
    ['!', 't!u-wild', ['t!u-wild', 'tu-wild']],
  ])('%s stays literal through the index', async (_c, q, names) => {
    await sync(names.map((name) => create(newId(), 'file', name)));
    expect(await searchNames(q)).toEqual([q]);
  });

  test('Unicode: case folds, accents and characters outside the BMP stay significant', async () => {
    for (const name of ['ÉCOLE-uni.txt', 'ecole-uni.txt', 'Straße-uni', '😀😀😀-uni', 'ΣΟΦΙΑ-uni']) await api.upload({}, { name, content: 'x' });
    expect(await searchNames('école-UNI')).toEqual(['ÉCOLE-uni.txt']);
    expect(await searchNames('ecole-uni')).toEqual(['ecole-uni.txt']);
    expect(await searchNames('STRASSE-uni')).toEqual([]);
    expect(await searchNames('straße-UNI')).toEqual(['Straße-uni']);
    expect(await searchNames('😀😀-u')).toEqual(['😀😀😀-uni']);
    expect(await searchNames('σοφια')).toEqual(['ΣΟΦΙΑ-uni']);
  });

  test('paging over the index keeps name order, ties by id, and the exact total', async () => {
    const ids = Array.from({ length: 7 }, () => newId());
    await sync(ids.map((id, i) => create(id, 'file', `Page-IDX-${i % 3}`, null)).map((op, i) => (i < 3 ? op : { ...op, payload: { ...op.payload, name: `page-idx-${i}` } })));
    const all = await api.get('/v1/files/search?q=page-idx');
    expect(all.body.total).toBe(7);
    const slice = await api.get('/v1/files/search?q=page-idx&limit=3&offset=2');
    expect(slice.body).toMatchObject({ total: 7, limit: 3, offset: 2 });
    expect(slice.body.items).toEqual(all.body.items.slice(2, 5));
    const names = all.body.items.map((i: { name: string }) => i.name);
    expect(names).toEqual([...names].sort((p: string, q: string) => (Buffer.from(p) < Buffer.from(q) ? -1 : 1)));
  });
});

describe('repair command', () => {
  test('reports and repairs counts and index entries that differ from the resources', async () => {
    const file = await api.upload({}, { name: 'repair-me.txt', content: 'x' });
    await env.db('folder_file_counts').where({ user_id: userId, parent_key: '' }).increment('files', 5);
    await env.db('search_grams').where({ user_id: userId, resource_id: file.body.id }).delete();
    await env.db('search_grams').insert({ user_id: userId, gram: 42, name: 'ghost', resource_id: newId() });

    const run = (args: string[]) =>
      promisify(execFile)('node', [path.resolve('dist/services/maintenance/fsck.main.js'), ...args], { env: { ...process.env, ...env.env } }).catch(
        (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
      );
    const checked = (await run([])) as { code?: number; stdout: string };
    expect(checked.code).toBe(1);
    expect(checked.stdout).toMatch(new RegExp(`count differed: user ${userId} folder \\(root\\): stored (\\d+), actual (\\d+)`));
    expect(checked.stdout).toMatch(new RegExp(`search index differed: user ${userId}: 1 stale entries, 1 files missing entries`));
    expect(await searchNames('repair-me')).toEqual([]);

    const fixed = (await run(['--repair'])) as { code?: number; stdout: string };
    expect(fixed.code ?? 0).toBe(0);
    expect(fixed.stdout).toMatch(/repaired 1 counts and 1 indexes that differed/);
    expect(await searchNames('repair-me')).toEqual(['repair-me.txt']);
    const again = (await run([])) as { code?: number; stdout: string };
    expect(again.code ?? 0).toBe(0);
    expect(again.stdout).toMatch(/derived data exact/);
    expect((await totals(null)).listed).toBe((await totals(null)).actual);
  });
});
