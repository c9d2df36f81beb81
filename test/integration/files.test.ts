import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import { DerivedData } from '../../shared/db/derived/derived.hooks';
import { at, fileView, ids, seedFileIn, type Seeded } from '../support/file.seeds';
import { expectError, insertFolder, markDeleted } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

let env: TestEnv;
let gateway: RunningGateway;
let api: Api;
let userId: string;
let rooter: { api: Api; userId: string };

/** A file of `owner` seeded in this file's database. */
const seedFile = (owner: string, name: string, parentId: string | null, extra: Parameters<typeof seedFileIn>[4] = {}) => seedFileIn(env.db, owner, name, parentId, extra);

beforeAll(async () => {
  env = await createTestEnv();
  gateway = await startGateway(env);
  const anon = new Api(gateway.baseUrl);
  const { api: admin } = await anon.login(ADMIN.username, ADMIN.password);
  ({ api, userId } = await admin.createUser('filer'));
  rooter = await admin.createUser('rooter');
});

afterAll(async () => {
  await gateway.close();
  await env.dropAll();
});

describe('the root of a user', () => {
  let r1: Seeded;
  let r2: Seeded;
  let alpha: string;
  let beta: string;
  let gamma: string;
  let inner: string;

  beforeAll(async () => {
    const owner = rooter.userId;
    r1 = await seedFile(owner, 'first.txt', null, { mimeType: null, size: 5, createdAt: at(1) });
    r2 = await seedFile(owner, 'second.txt', null, { size: 7, createdAt: at(2), updatedAt: at(9) });
    await seedFile(owner, 'deleted.txt', null, { createdAt: at(3) }).then((f) => markDeleted(env.db, owner, f.id, at(4)));
    gamma = await insertFolder(env.db, owner, 'gamma', null, { createdAt: at(5) });
    alpha = await insertFolder(env.db, owner, 'alpha', null, { createdAt: at(6), updatedAt: at(8) });
    beta = await insertFolder(env.db, owner, 'beta', null, { createdAt: at(7) });
    await insertFolder(env.db, owner, 'delta', null, { deletedAt: at(8) });
    inner = await insertFolder(env.db, owner, 'inner', alpha, { createdAt: at(9) });
    await seedFile(owner, 'nested.txt', alpha);
    // Another user's root holds a file too; it must never show up here.
    await seedFile(userId, 'not-rooters.txt', null);
  });

  test('GET /v1/files without folderId lists only the active root files of the caller, newest first, in the File representation', async () => {
    const res = await rooter.api.get('/v1/files');

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [fileView(r2), fileView(r1)], total: 2, limit: 50, offset: 0 });
  });

  test('a file without a mime type is shown with mimeType ""', async () => {
    const res = await rooter.api.get(`/v1/files/${r1.id}`);

    expect(res.body.mimeType).toBe('');
  });

  test('GET /v1/files with an empty folderId lists the root', async () => {
    const res = await rooter.api.get('/v1/files?folderId=');

    expect(res.status).toBe(200);
    expect(ids(res)).toEqual([r2.id, r1.id]);
  });

  test('GET /v1/folders without parentId lists the active root folders by name ascending, in the Folder representation', async () => {
    const res = await rooter.api.get('/v1/folders');

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      items: [
        { id: alpha, name: 'alpha', parentId: '', createdAt: at(6).toISOString(), updatedAt: at(8).toISOString(), rev: 1 },
        { id: beta, name: 'beta', parentId: '', createdAt: at(7).toISOString(), updatedAt: at(7).toISOString(), rev: 1 },
        { id: gamma, name: 'gamma', parentId: '', createdAt: at(5).toISOString(), updatedAt: at(5).toISOString(), rev: 1 },
      ],
    });
  });

  test('GET /v1/folders with an empty parentId lists the root folders', async () => {
    const res = await rooter.api.get('/v1/folders?parentId=');

    expect(res.status).toBe(200);
    expect(ids(res)).toEqual([alpha, beta, gamma]);
  });

  test('GET /v1/folders with parentId lists the folders directly inside it', async () => {
    const res = await rooter.api.get(`/v1/folders?parentId=${alpha}`);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [{ id: inner, name: 'inner', parentId: alpha, createdAt: at(9).toISOString(), updatedAt: at(9).toISOString(), rev: 1 }] });
  });

  test('GET /v1/folders of a folder without subfolders returns an empty items list', async () => {
    const res = await rooter.api.get(`/v1/folders?parentId=${inner}`);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [] });
  });
});

describe('GET /v1/files in a folder', () => {
  test('lists only the active files directly in that folder', async () => {
    const folder = await insertFolder(env.db, userId, 'listing');
    const sub = await insertFolder(env.db, userId, 'sub', folder);
    const a = await seedFile(userId, 'a.txt', folder, { createdAt: at(1) });
    const b = await seedFile(userId, 'b.txt', folder, { createdAt: at(2) });
    await seedFile(userId, 'deep.txt', sub);
    const gone = await seedFile(userId, 'gone.txt', folder, { createdAt: at(3) });
    await markDeleted(env.db, userId, gone.id, at(4));

    const res = await api.get(`/v1/files?folderId=${folder}`);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [fileView(b), fileView(a)], total: 2, limit: 50, offset: 0 });
  });

  test('an empty folder gives items [] and total 0', async () => {
    const folder = await insertFolder(env.db, userId, 'empty');

    const res = await api.get(`/v1/files?folderId=${folder}`);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], total: 0, limit: 50, offset: 0 });
  });

  describe('sorting', () => {
    let folder: string;
    let A: string;
    let B: string;
    let C: string;

    beforeAll(async () => {
      folder = await insertFolder(env.db, userId, 'sorting');
      // Names, sizes, creation and update times each give a different order.
      A = (await seedFile(userId, 'zeta', folder, { size: 300, createdAt: at(1), updatedAt: at(5) })).id;
      B = (await seedFile(userId, 'alpha', folder, { size: 100, createdAt: at(2), updatedAt: at(6) })).id;
      C = (await seedFile(userId, 'mid', folder, { size: 200, createdAt: at(3), updatedAt: at(4) })).id;
    });

    test.each([
      ['sort=size&order=desc', 'A C B'],
      ['sort=size&order=asc', 'B C A'],
      ['sort=created_at&order=desc', 'C B A'],
      ['sort=created_at&order=asc', 'A B C'],
      ['sort=updated_at&order=desc', 'B A C'],
      ['sort=updated_at&order=asc', 'C A B'],
      ['sort=added_at&order=desc', 'C B A'],
      ['sort=added_at&order=asc', 'A B C'],
      ['sort=name&order=asc', 'A B C'],
      ['sort=bogus', 'C B A'],
      ['sort=size', 'A C B'],
      ['sort=size&order=upward', 'A C B'],
      ['', 'C B A'],
    ])('%s lists the files in the order %s', async (query, expected) => {
      const byLetter: Record<string, string> = { A, B, C };

      const res = await api.get(`/v1/files?folderId=${folder}&${query}`);

      expect(res.status).toBe(200);
      expect(ids(res)).toEqual(expected.split(' ').map((l) => byLetter[l]));
    });
  });

  describe('paging', () => {
    let ties: string;
    let tieIds: string[];

    beforeAll(async () => {
      ties = await insertFolder(env.db, userId, 'ties');
      tieIds = [];
      for (let i = 0; i < 7; i++) tieIds.push((await seedFile(userId, `tie-${i}`, ties, { size: 42, createdAt: at(10), updatedAt: at(11) })).id);
    });

    test.each([
      ['created_at', 'desc'],
      ['created_at', 'asc'],
      ['updated_at', 'desc'],
      ['size', 'asc'],
    ])('with equal %s values, %s pages are ordered by id and never overlap or skip', async (sort, order) => {
      const seen: string[] = [];
      const totals: number[] = [];

      for (let offset = 0; offset < 9; offset += 3) {
        const res = await api.get(`/v1/files?folderId=${ties}&sort=${sort}&order=${order}&limit=3&offset=${offset}`);
        expect(res.status).toBe(200);
        seen.push(...ids(res));
        totals.push(res.body.total);
      }

      const sorted = [...tieIds].sort();
      expect(seen).toEqual(order === 'asc' ? sorted : sorted.reverse());
      expect(totals).toEqual([7, 7, 7]);
    });

    test('total counts every matching file whatever limit and offset say', async () => {
      const page = await api.get(`/v1/files?folderId=${ties}&limit=2&offset=6`);
      const beyond = await api.get(`/v1/files?folderId=${ties}&limit=2&offset=10`);

      expect(page.body).toMatchObject({ total: 7, limit: 2, offset: 6 });
      expect(page.body.items).toHaveLength(1);
      expect(beyond.body).toEqual({ items: [], total: 7, limit: 2, offset: 10 });
    });

    test('an offset of twenty digits gives an empty page with the right total', async () => {
      const res = await api.get(`/v1/files?folderId=${ties}&offset=99999999999999999999`);

      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ items: [], total: 7 });
    });

    describe('with 1001 files', () => {
      let big: string;
      let rows: Array<{ id: string; size_bytes: number; created_at: Date; updated_at: Date }>;

      beforeAll(async () => {
        big = await insertFolder(env.db, userId, 'big');
        rows = Array.from({ length: 1001 }, (_, i) => ({
          id: newId(),
          user_id: userId,
          parent_id: big,
          type: 'file',
          name: `big-${String(i).padStart(4, '0')}`,
          size_bytes: i,
          mime_type: 'text/plain',
          created_at: at(i % 50),
          updated_at: at(i % 50),
        }));
        await env.db.batchInsert('resources', rows, 500);
        await DerivedData.of(env.db).activated(userId, rows.map((r) => r.id));
      });

      test('no limit gives a page of 50', async () => {
        const res = await api.get(`/v1/files?folderId=${big}`);

        expect(res.body).toMatchObject({ total: 1001, limit: 50, offset: 0 });
        expect(res.body.items).toHaveLength(50);
      });

      test.each(['1001', '5000', '99999999999999999999'])('limit=%s is clamped to 1000', async (limit) => {
        const res = await api.get(`/v1/files?folderId=${big}&limit=${limit}`);

        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ total: 1001, limit: 1000, offset: 0 });
        expect(res.body.items).toHaveLength(1000);
      });

      test.each([
        ['size', 'asc'],
        ['size', 'desc'],
        ['created_at', 'desc'],
        ['updated_at', 'asc'],
      ])('pages by %s %s read straight at small offsets and by the ids first at deep ones agree with the full order', async (sort, order) => {
        const key = (r: (typeof rows)[number]) => (sort === 'size' ? r.size_bytes : (sort === 'created_at' ? r.created_at : r.updated_at).getTime());
        const sign = order === 'asc' ? 1 : -1;
        const expected = [...rows].sort((a, b) => sign * (key(a) - key(b) || (a.id < b.id ? -1 : 1))).map((r) => r.id);

        const seen: string[] = [];
        for (let offset = 0; offset < 300; offset += 30) {
          const res = await api.get(`/v1/files?folderId=${big}&sort=${sort}&order=${order}&limit=30&offset=${offset}`);
          expect(res.body).toMatchObject({ total: 1001, limit: 30, offset });
          seen.push(...ids(res));
        }

        expect(seen).toEqual(expected.slice(0, 300));
      });

      test('limit=1000 returns 1000 items', async () => {
        const res = await api.get(`/v1/files?folderId=${big}&limit=1000&offset=1`);

        expect(res.body).toMatchObject({ total: 1001, limit: 1000, offset: 1 });
        expect(res.body.items).toHaveLength(1000);
      });
    });
  });

  test.each([
    ['limit=0'],
    ['limit=-1'],
    ['limit=1.5'],
    ['limit=abc'],
    ['limit=1e3'],
    ['offset=-1'],
    ['offset=1.5'],
    ['offset=abc'],
  ])('%s gives 400 INVALID_REQUEST', async (query) => {
    expectError(await api.get(`/v1/files?${query}`), 400, 'INVALID_REQUEST');
  });

  test.each([
    ['not hex', 'xyz'],
    ['upper-case hex', 'ABCDEF0123456789ABCDEF0123456789'],
    ['33 characters', `${newId()}0`],
  ])('a malformed folderId (%s) gives 400 INVALID_REQUEST', async (_label, folderId) => {
    expectError(await api.get(`/v1/files?folderId=${folderId}`), 400, 'INVALID_REQUEST');
  });

  test('lists and searches show times to the millisecond, in UTC, as the file itself does', async () => {
    const folder = await insertFolder(env.db, userId, 'timed');
    const file = await seedFile(userId, 'timed-leap-day.txt', folder, { createdAt: new Date('2024-02-29T23:59:58.007Z'), updatedAt: new Date('2025-01-01T00:00:00.990Z') });
    const expected = { id: file.id, createdAt: '2024-02-29T23:59:58.007Z', updatedAt: '2025-01-01T00:00:00.990Z' };

    const listed = await api.get(`/v1/files?folderId=${folder}`);
    const found = await api.get('/v1/files/search?q=timed-leap');
    const single = await api.get(`/v1/files/${file.id}`);

    expect(listed.body.items).toEqual([expect.objectContaining(expected)]);
    expect(found.body.items).toEqual([expect.objectContaining(expected)]);
    expect(single.body).toEqual(expect.objectContaining(expected));
  });

  test('a well-formed folderId that names nothing gives 404 NOT_FOUND', async () => {
    expectError(await api.get(`/v1/files?folderId=${newId()}`), 404, 'NOT_FOUND');
  });

  test('a folderId that names a file gives 404 NOT_FOUND', async () => {
    const file = await seedFile(userId, 'not-a-folder.txt', null);

    expectError(await api.get(`/v1/files?folderId=${file.id}`), 404, 'NOT_FOUND');
  });

  test('a folderId of a deleted folder gives 404 NOT_FOUND', async () => {
    const folder = await insertFolder(env.db, userId, 'deleted-folder', null, { deletedAt: at(1) });

    expectError(await api.get(`/v1/files?folderId=${folder}`), 404, 'NOT_FOUND');
  });
});

describe('GET /v1/files/:id', () => {
  test('returns the file in the File representation', async () => {
    const folder = await insertFolder(env.db, userId, 'get-home');
    const file = await seedFile(userId, 'report.pdf', folder, { size: 1234, mimeType: 'application/pdf', createdAt: at(1), updatedAt: at(2) });

    const res = await api.get(`/v1/files/${file.id}`);

    expect(res.status).toBe(200);
    expect(res.body).toEqual(fileView(file));
  });

  test.each([
    ['an unknown id', async () => newId()],
    ['a malformed id', async () => 'not-an-id'],
    ['a folder id', async () => insertFolder(env.db, userId, 'get-folder')],
    ['a deleted file', async () => (await seedFile(userId, 'get-deleted.txt', null)).id],
  ])('%s gives 404 NOT_FOUND', async (label, arrange) => {
    const id = await arrange();
    if (label === 'a deleted file') await api.delete(`/v1/files/${id}`);

    expectError(await api.get(`/v1/files/${id}`), 404, 'NOT_FOUND');
  });
});

describe('DELETE /v1/files/:id', () => {
  test('soft-deletes the file: 200 with its id, deleted_at and updated_at set to one instant, and it leaves every listing', async () => {
    const folder = await insertFolder(env.db, userId, 'delete-home');
    const file = await seedFile(userId, 'doomed-qx10.txt', folder, { createdAt: at(1) });

    const res = await api.delete(`/v1/files/${file.id}`);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: file.id });
    const row = await env.db('resources').where({ id: file.id }).first();
    expect(row.deleted_at).toBeInstanceOf(Date);
    expect(row.updated_at.getTime()).toBe(row.deleted_at.getTime());
    expect(row.updated_at.getTime()).toBeGreaterThan(at(1).getTime());
    expectError(await api.get(`/v1/files/${file.id}`), 404, 'NOT_FOUND');
    expect((await api.get(`/v1/files?folderId=${folder}`)).body).toMatchObject({ items: [], total: 0 });
    expect((await api.get('/v1/files/search?q=doomed-qx10')).body).toMatchObject({ items: [], total: 0 });
  });

  test('deleting a deleted file gives 404 NOT_FOUND and keeps the first deletion time', async () => {
    const file = await seedFile(userId, 'twice.txt', null);
    await api.delete(`/v1/files/${file.id}`);
    const first = (await env.db('resources').where({ id: file.id }).first()).deleted_at;

    expectError(await api.delete(`/v1/files/${file.id}`), 404, 'NOT_FOUND');
    expect((await env.db('resources').where({ id: file.id }).first()).deleted_at).toEqual(first);
  });

  test('a folder id gives 404 NOT_FOUND and the folder stays active', async () => {
    const folder = await insertFolder(env.db, userId, 'not-deletable-here');

    expectError(await api.delete(`/v1/files/${folder}`), 404, 'NOT_FOUND');
    expect((await env.db('resources').where({ id: folder }).first()).deleted_at).toBeNull();
  });

  test.each([
    ['an unknown id', newId()],
    ['a malformed id', 'not-an-id'],
  ])('%s gives 404 NOT_FOUND', async (_label, id) => {
    expectError(await api.delete(`/v1/files/${id}`), 404, 'NOT_FOUND');
  });
});

describe('GET /v1/folders errors', () => {
  test('an unknown parentId gives 404 NOT_FOUND', async () => {
    expectError(await api.get(`/v1/folders?parentId=${newId()}`), 404, 'NOT_FOUND');
  });

  test('a deleted parent gives 404 NOT_FOUND', async () => {
    const parent = await insertFolder(env.db, userId, 'deleted-parent', null, { deletedAt: at(1) });

    expectError(await api.get(`/v1/folders?parentId=${parent}`), 404, 'NOT_FOUND');
  });

  test('a parentId that names a file gives 404 NOT_FOUND', async () => {
    const file = await seedFile(userId, 'file-as-parent.txt', null);

    expectError(await api.get(`/v1/folders?parentId=${file.id}`), 404, 'NOT_FOUND');
  });

  test('a malformed parentId gives 400 INVALID_REQUEST', async () => {
    expectError(await api.get('/v1/folders?parentId=nope'), 400, 'INVALID_REQUEST');
  });
});
