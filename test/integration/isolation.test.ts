import { Api } from '../support/client';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { countRows, expectError, insertFolder } from '../support/fixtures';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';

/** One user's files are absent to another, on either driver; a refused write leaves the store as it was. */
describe.each(DRIVERS)('isolation on the %s driver', (driver) => {
  let env: TestEnv;
  let stored: StoredContent;
  let gateway: RunningGateway;
  let alice: { api: Api; userId: string };
  let mallory: { api: Api; userId: string };

  /** Alice's resources; Mallory knows every id and tries them all. */
  let folder: string;
  let subfolder: string;
  let rootFile: string;
  let nestedFile: string;
  let malloryFile: string;
  let malloryFolder: string;

  const snapshot = async () => ({ files: await stored.everything(), multipart: await stored.unfinishedMultipartUploads(), rows: await countRows(env.db, 'resources') });
  const rowOf = (id: string) => env.db('resources').where({ id }).first();
  const idsOf = (res: { body: { items: Array<{ id: string }> } }) => res.body.items.map((i) => i.id);
  /** The user's active files at the root, every one of them named "secret-…", sorted by id. */
  const ownActiveFiles = async (userId: string) =>
    (await env.db('resources').where({ user_id: userId, type: 'file', parent_id: null, deleted_at: null }).select('id')).map((r) => r.id as string).sort();

  beforeAll(async () => {
    env = await createTestEnv(onDriver(driver));
    stored = new StoredContent(env);
    gateway = await startGateway(env);
    const { api: admin } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
    alice = await admin.createUser('alice');
    mallory = await admin.createUser('mallory');

    folder = await insertFolder(env.db, alice.userId, 'Private');
    subfolder = await insertFolder(env.db, alice.userId, 'Deeper', folder);
    rootFile = (await alice.api.upload({}, { name: 'secret-plans.txt', content: 'alice only', type: 'text/plain' })).body.id;
    nestedFile = (await alice.api.upload({ folderId: folder }, { name: 'secret-diary.txt', content: 'dear diary', type: 'text/plain' })).body.id;
    malloryFolder = await insertFolder(env.db, mallory.userId, 'Mine');
    malloryFile = (await mallory.api.upload({}, { name: 'secret-mallory.txt', content: 'mallory', type: 'text/plain' })).body.id;
  });

  afterAll(async () => {
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await gateway.close();
    await env.dropAll();
  });

  describe("another user's files and folders are absent to a second user", () => {
    test.each([
      ['GET /v1/files/:id of a root file', () => `/v1/files/${rootFile}`],
      ['GET /v1/files/:id of a file in a folder', () => `/v1/files/${nestedFile}`],
      ['GET /v1/files/:id/content', () => `/v1/files/${rootFile}/content`],
      ['GET /v1/files?folderId=', () => `/v1/files?folderId=${folder}`],
      ['GET /v1/files?folderId= of a subfolder', () => `/v1/files?folderId=${subfolder}`],
      ['GET /v1/folders?parentId=', () => `/v1/folders?parentId=${folder}`],
    ])('%s gives 404 NOT_FOUND', async (_label, url) => {
      expectError(await mallory.api.get(url()), 404, 'NOT_FOUND');
    });

    test("the 404 for another user's file is the same as for an id that names nothing", async () => {
      const theirs = await mallory.api.get(`/v1/files/${rootFile}`);
      const nothing = await mallory.api.get(`/v1/files/${'0'.repeat(32)}`);

      expect({ status: theirs.status, body: theirs.body }).toEqual({ status: nothing.status, body: nothing.body });
    });

    test('DELETE /v1/files/:id gives 404 NOT_FOUND and the file stays active for its owner', async () => {
      const res = await mallory.api.delete(`/v1/files/${rootFile}`);

      expectError(res, 404, 'NOT_FOUND');
      expect((await rowOf(rootFile)).deleted_at).toBeNull();
      expect((await alice.api.get(`/v1/files/${rootFile}`)).status).toBe(200);
    });

    test('DELETE /v1/files/:id of a folder gives 404 NOT_FOUND and the folder stays active', async () => {
      expectError(await mallory.api.delete(`/v1/files/${folder}`), 404, 'NOT_FOUND');
      expect((await rowOf(folder)).deleted_at).toBeNull();
    });

    test("uploading into another user's folder gives 404 NOT_FOUND and leaves nothing behind", async () => {
      const before = await snapshot();

      const res = await mallory.api.upload({ folderId: folder }, { name: 'planted.txt', content: 'x', type: 'text/plain' });

      expectError(res, 404, 'NOT_FOUND');
      expect(await snapshot()).toEqual(before);
    });

    test("uploading with another user's resource id gives 400 INVALID_REQUEST and leaves that resource unchanged", async () => {
      const original = await rowOf(rootFile);
      const before = await snapshot();

      const res = await mallory.api.upload({ id: rootFile }, { name: 'hijack.txt', content: 'x', type: 'text/plain' });

      expectError(res, 400, 'INVALID_REQUEST');
      expect(await snapshot()).toEqual(before);
      expect(await rowOf(rootFile)).toEqual(original);
    });

    test("the root listing shows only the caller's own files", async () => {
      const own = await ownActiveFiles(mallory.userId);

      const res = await mallory.api.get('/v1/files');

      expect(res.status).toBe(200);
      expect(own).toContain(malloryFile);
      expect({ ids: idsOf(res).sort(), total: res.body.total }).toEqual({ ids: own, total: own.length });
    });

    test("search never returns another user's files", async () => {
      const own = await ownActiveFiles(mallory.userId);

      const res = await mallory.api.get('/v1/files/search?q=secret');

      expect(res.status).toBe(200);
      expect(own).toContain(malloryFile);
      expect({ ids: idsOf(res).sort(), total: res.body.total }).toEqual({ ids: own, total: own.length });
    });

    test('the owner, searching the same text, sees only their own files', async () => {
      const res = await alice.api.get('/v1/files/search?q=secret');

      expect(idsOf(res).sort()).toEqual([rootFile, nestedFile].sort());
    });

    test("the root folder listing shows only the caller's own folders", async () => {
      const res = await mallory.api.get('/v1/folders');

      expect(res.status).toBe(200);
      expect(idsOf(res)).toEqual([malloryFolder]);
    });

    test('names are unique per user at the root: a second user may use a name the first user holds', async () => {
      const res = await mallory.api.upload({}, { name: 'secret-plans.txt', content: 'mine', type: 'text/plain' });

      expect(res.status).toBe(201);
      expect((await env.db('resources').where({ name: 'secret-plans.txt' }).whereNull('deleted_at').select('user_id')).map((r) => r.user_id).sort()).toEqual(
        [alice.userId, mallory.userId].sort(),
      );
    });
  });
});
