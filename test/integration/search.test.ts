import { Api } from '../support/client';
import { at, fileView, ids, names, seedFileIn } from '../support/file.seeds';
import { expectError, insertFolder, markDeleted } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

let env: TestEnv;
let gateway: RunningGateway;
let api: Api;
let userId: string;

/** A file of `owner` seeded in this file's database. */
const seedFile = (owner: string, name: string, parentId: string | null, extra: Parameters<typeof seedFileIn>[4] = {}) => seedFileIn(env.db, owner, name, parentId, extra);

beforeAll(async () => {
  env = await createTestEnv();
  gateway = await startGateway(env);
  const anon = new Api(gateway.baseUrl);
  const { api: admin } = await anon.login(ADMIN.username, ADMIN.password);
  ({ api, userId } = await admin.createUser('filer'));
});

afterAll(async () => {
  await gateway.close();
  await env.dropAll();
});

describe('GET /v1/files/search', () => {
  const search = (q: string, extra = '') => api.get(`/v1/files/search?q=${encodeURIComponent(q)}${extra}`);

  test('matches active files whose name contains q, case-insensitively, in any folder, by name ascending; folders never match', async () => {
    const folder = await insertFolder(env.db, userId, 'search-home');
    const f1 = await seedFile(userId, 'gamma report-qx1.pdf', folder);
    const f2 = await seedFile(userId, 'alpha Report-QX1.txt', null);
    const f3 = await seedFile(userId, 'beta REPORT-qx1', null);
    await insertFolder(env.db, userId, 'report-qx1 folder');
    await seedFile(userId, 'deleted report-qx1', null).then((f) => markDeleted(env.db, userId, f.id, at(1)));
    await seedFile(userId, 'report qx1 spaced', null);

    const res = await search('rEpOrT-Qx1');

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [fileView(f2), fileView(f3), fileView(f1)], total: 3, limit: 50, offset: 0 });
  });

  test('equal names are ordered by id', async () => {
    const inA = await seedFile(userId, 'same-qx2', await insertFolder(env.db, userId, 'qx2-a'));
    const inB = await seedFile(userId, 'same-qx2', await insertFolder(env.db, userId, 'qx2-b'));
    const other = await seedFile(userId, 'other-qx2', null);

    const res = await search('qx2');

    expect(ids(res)).toEqual([other.id, ...[inA.id, inB.id].sort()]);
  });

  describe('accents are significant', () => {
    beforeAll(async () => {
      await seedFile(userId, 'caf\u00e9-qx3.txt', null);
      await seedFile(userId, 'cafe-qx3.txt', null);
    });

    test.each([
      ['cafe-qx3', ['cafe-qx3.txt']],
      ['caf\u00e9-qx3', ['caf\u00e9-qx3.txt']],
      ['CAF\u00c9-QX3', ['caf\u00e9-qx3.txt']],
      ['cafe\u0301-qx3', ['caf\u00e9-qx3.txt']],
    ])('q=%j finds %j only', async (q, expected) => {
      const res = await search(q);

      expect(res.status).toBe(200);
      expect(names(res)).toEqual(expected);
    });
  });

  test.each([
    ['%', '50%-qx4', ['50%-qx4', '50x-qx4', '5-qx4']],
    ['_', 'a_b-qx5', ['a_b-qx5', 'axb-qx5']],
    ['\\', 'a\\b-qx6', ['a\\b-qx6', 'ab-qx6']],
    ['!', 'a!b-qx7', ['a!b-qx7', 'ab-qx7']],
  ])('%s in q is a literal character, not a wildcard', async (_char, q, files) => {
    for (const name of files) await seedFile(userId, name, null);

    const res = await search(q);

    expect(res.status).toBe(200);
    expect(names(res)).toEqual([q]);
  });

  test('paging returns the requested slice and the total of all matches', async () => {
    for (const n of [1, 2, 3, 4, 5]) await seedFile(userId, `page-qx8-${n}`, null);

    const res = await search('page-qx8', '&limit=2&offset=2');

    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 5, limit: 2, offset: 2 });
    expect(names(res)).toEqual(['page-qx8-3', 'page-qx8-4']);
  });

  test('no match gives items [] and total 0', async () => {
    const res = await search('matches-nothing-qx9');

    expect(res.body).toEqual({ items: [], total: 0, limit: 50, offset: 0 });
  });

  test.each([
    ['255 ASCII characters', 'x'.repeat(255)],
    ['255 characters outside the BMP', '\u{1F600}'.repeat(255)],
  ])('q of %s is accepted', async (_label, q) => {
    const res = await search(q);

    expect(res.status).toBe(200);
    expect(res.body.total).toBe(0);
  });

  test.each([
    ['missing', '/v1/files/search'],
    ['empty', '/v1/files/search?q='],
    ['256 characters long', `/v1/files/search?q=${'x'.repeat(256)}`],
  ])('q %s gives 400 INVALID_REQUEST', async (_label, url) => {
    expectError(await api.get(url), 400, 'INVALID_REQUEST');
  });

  test.each(['limit=0', 'offset=-1'])('%s gives 400 INVALID_REQUEST', async (query) => {
    expectError(await search('x', `&${query}`), 400, 'INVALID_REQUEST');
  });
});
