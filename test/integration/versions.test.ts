import { newId } from '../../shared/ids';
import { UsageRepository } from '../../shared/quota/usage.repository';
import { createLogger } from '../../shared/logger';
import { startMaintenance, type MaintenanceWorkers } from '../../services/worker/maintenance.workers';
import type { Api } from '../support/client';
import { expectError, sha256, waitFor } from '../support/fixtures';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { startStack, type TestStack } from '../support/stack';
import { TusRaw } from '../support/tus';

/** Versions replaced more than this ago (about 2.6 seconds) are expired by the scheduled job. */
const RETENTION_DAYS = '0.00003';
const MAX_VERSIONS = 3;

describe.each(DRIVERS)('versions on the %s driver', (driver) => {
  let stack: TestStack;
  let stored: StoredContent;

  beforeAll(async () => {
    stack = await startStack(onDriver(driver, { VERSION_RETENTION_DAYS: RETENTION_DAYS, MAX_VERSIONS: String(MAX_VERSIONS) }));
    stored = new StoredContent(stack.env);
  });

  afterAll(async () => {
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await stack?.close();
  });

  const newUser = () => stack.admin.createUser(`v${newId().slice(0, 12)}`);
  const put = (api: Api, id: string, body: string, headers: Record<string, string> = {}) =>
    api.request('PUT', `/v1/files/${id}/content`, { body: Buffer.from(body), headers: { 'content-type': 'text/plain', ...headers } });
  const versionsOf = async (api: Api, id: string, query = '') => (await api.get(`/v1/files/${id}/versions${query}`)).body;
  const b64 = (text: string) => Buffer.from(sha256(text), 'hex').toString('base64');
  const keyOf = async (versionId: string) => (await stack.env.db('file_versions').where({ id: versionId }).first()).storage_key as string;

  async function fileWith(api: Api, content: string, name = `doc-${newId()}.txt`) {
    const res = await api.upload({}, { name, content, type: 'text/plain' });
    expect(res.status).toBe(201);
    return res.body as { id: string; rev: number };
  }

  describe('versions are kept by every replacing path', () => {
    test('PUT keeps the replaced content, listed most recently replaced first, with who wrote it and when', async () => {
      const { api, deviceId } = await newUser();
      const file = await fileWith(api, 'one');
      const written = (await stack.env.db('resources').where({ id: file.id }).first()).content_at as Date;
      expect((await put(api, file.id, 'two!')).status).toBe(200);
      expect((await put(api, file.id, 'three')).status).toBe(200);

      const page = await versionsOf(api, file.id);
      expect(page).toMatchObject({ total: 2, limit: 50, offset: 0 });
      expect(page.items).toEqual([
        { id: expect.stringMatching(/^[0-9a-f]{32}$/), size: 4, sha256: sha256('two!'), mimeType: 'text/plain', createdAt: expect.any(String), replacedAt: expect.any(String), deviceId },
        { id: expect.any(String), size: 3, sha256: sha256('one'), mimeType: 'text/plain', createdAt: written.toISOString(), replacedAt: expect.any(String), deviceId },
      ]);
      expect(Date.parse(page.items[0].replacedAt)).toBeGreaterThanOrEqual(Date.parse(page.items[1].replacedAt));
      expect((await versionsOf(api, file.id, '?limit=1&offset=1')).items.map((v: { sha256: string }) => v.sha256)).toEqual([sha256('one')]);
      expectError(await api.get(`/v1/files/${file.id}/versions?limit=0`), 400, 'INVALID_REQUEST');
    });

    test('a resumable upload with fileId keeps the replaced content as a version', async () => {
      const { api } = await newUser();
      const file = await fileWith(api, 'before tus');
      const data = Buffer.from('after tus');
      const location = await new TusRaw(api).start(data.length, { name: 'ignored.txt', fileId: file.id });
      expect((await new TusRaw(api).patch(location, 0, data)).status).toBe(200);
      expect((await versionsOf(api, file.id)).items.map((v: { sha256: string }) => v.sha256)).toEqual([sha256('before tus')]);
    });

    test('a version reads like the content: Range, ETag, Repr-Digest, If-None-Match', async () => {
      const { api } = await newUser();
      const file = await fileWith(api, 'old bytes here');
      await put(api, file.id, 'new');
      const [v] = (await versionsOf(api, file.id)).items;
      const url = `/v1/files/${file.id}/versions/${v.id}/content`;

      const full = await api.get(url);
      expect(full.status).toBe(200);
      expect(full.text).toBe('old bytes here');
      expect(full.headers.get('etag')).toBe(`"${sha256('old bytes here')}"`);
      expect(full.headers.get('repr-digest')).toBe(`sha-256=:${b64('old bytes here')}:`);
      expect(full.headers.get('accept-ranges')).toBe('bytes');
      const part = await api.get(url, { range: 'bytes=4-8' });
      expect(part.status).toBe(206);
      expect(part.text).toBe('bytes');
      expect(part.headers.get('repr-digest')).toBe(`sha-256=:${b64('old bytes here')}:`);
      expect((await api.get(url, { 'if-none-match': `"${sha256('old bytes here')}"` })).status).toBe(304);
    });

    test('restore: the version becomes the content through the PUT path (rev, feed, counters); the replaced content becomes a version; the restored one stays', async () => {
      const { api, userId } = await newUser();
      const file = await fileWith(api, 'first');
      const second = (await put(api, file.id, 'second')).body;
      const [first] = (await versionsOf(api, file.id)).items;

      expectError(await api.request('POST', `/v1/files/${file.id}/versions/${first.id}/restore`, { headers: { 'if-match': `"${sha256('other')}"` } }), 412, 'PRECONDITION_FAILED');
      const restored = await api.request('POST', `/v1/files/${file.id}/versions/${first.id}/restore`, { headers: { 'if-match': `"${sha256('second')}"` } });

      expect(restored.status).toBe(200);
      expect(restored.body).toMatchObject({ id: file.id, size: 5, sha256: sha256('first'), rev: second.rev + 1, mimeType: 'text/plain' });
      expect((await api.get(`/v1/files/${file.id}/content`)).text).toBe('first');
      const items = (await versionsOf(api, file.id)).items as Array<{ id: string; sha256: string }>;
      expect(items.map((v) => v.sha256)).toEqual([sha256('second'), sha256('first')]);
      expect(items[1]!.id).toBe(first.id);
      const feed = (await api.get('/v1/sync/changes')).body.items.find((c: { id: string }) => c.id === file.id);
      expect(feed).toMatchObject({ rev: second.rev + 1, sha256: sha256('first') });
      expect((await api.get('/v1/users/me/usage')).body).toMatchObject({ filesBytes: 5, versionsBytes: 11 });
      expect(await new UsageRepository(stack.env.db).differences(userId)).toEqual([]);
    });

    test('delete: 204, its bytes freed at once and gone from the store', async () => {
      const { api } = await newUser();
      const file = await fileWith(api, 'to forget');
      await put(api, file.id, 'x');
      const [v] = (await versionsOf(api, file.id)).items;
      const key = await keyOf(v.id);

      expect((await api.delete(`/v1/files/${file.id}/versions/${v.id}`)).status).toBe(204);
      expect((await api.get('/v1/users/me/usage')).body).toMatchObject({ versionsBytes: 0, filesBytes: 1 });
      expect(await stored.exists(key)).toBe(false);
      expectError(await api.get(`/v1/files/${file.id}/versions/${v.id}/content`), 404, 'NOT_FOUND');
      expectError(await api.delete(`/v1/files/${file.id}/versions/${v.id}`), 404, 'NOT_FOUND');
    });

    test('404 for another user\'s file, a folder, a deleted file, and a version that is not that file\'s', async () => {
      const { api } = await newUser();
      const { api: stranger } = await newUser();
      const file = await fileWith(api, 'mine');
      const other = await fileWith(api, 'mine too');
      await put(api, file.id, 'mine, changed');
      const [v] = (await versionsOf(api, file.id)).items;
      expectError(await stranger.get(`/v1/files/${file.id}/versions`), 404, 'NOT_FOUND');
      expectError(await stranger.get(`/v1/files/${file.id}/versions/${v.id}/content`), 404, 'NOT_FOUND');
      expectError(await stranger.request('POST', `/v1/files/${file.id}/versions/${v.id}/restore`), 404, 'NOT_FOUND');
      expectError(await stranger.delete(`/v1/files/${file.id}/versions/${v.id}`), 404, 'NOT_FOUND');
      expectError(await api.get(`/v1/files/${other.id}/versions/${v.id}/content`), 404, 'NOT_FOUND');
      expectError(await api.get(`/v1/files/${file.id}/versions/${newId()}/content`), 404, 'NOT_FOUND');
      expectError(await api.get(`/v1/files/not-an-id/versions`), 404, 'NOT_FOUND');
      const folder = newId();
      await api.post('/v1/sync/ops', { ops: [{ opId: 1, type: 'create', resourceId: folder, payload: { resourceType: 'folder', name: 'f', parentId: null } }] });
      expectError(await api.get(`/v1/files/${folder}/versions`), 404, 'NOT_FOUND');
      expect((await api.delete(`/v1/files/${file.id}`)).status).toBe(200);
      expectError(await api.get(`/v1/files/${file.id}/versions`), 404, 'NOT_FOUND');
    });

    test('deleting a file keeps its versions for a restore from the trash; purging it purges them', async () => {
      const { api, userId } = await newUser();
      const file = await fileWith(api, 'long lived');
      await put(api, file.id, 'changed');
      const [v] = (await versionsOf(api, file.id)).items;
      const key = await keyOf(v.id);
      expect((await api.delete(`/v1/files/${file.id}`)).status).toBe(200);
      expect((await api.post(`/v1/trash/${file.id}/restore`)).status).toBe(200);
      expect((await versionsOf(api, file.id)).total).toBe(1);

      expect((await api.delete(`/v1/files/${file.id}`)).status).toBe(200);
      expect((await api.delete(`/v1/trash/${file.id}`)).status).toBe(204);
      expect(await stack.env.db('file_versions').where({ file_id: file.id }).select('id')).toEqual([]);
      expect(await stored.exists(key)).toBe(false);
      expect((await api.get('/v1/users/me/usage')).body).toMatchObject({ usedBytes: 0 });
      expect(await new UsageRepository(stack.env.db).differences(userId)).toEqual([]);
    });
  });

  describe('limits', () => {
    test('at most MAX_VERSIONS are kept per file, the oldest dropped first, their bytes removed', async () => {
      const { api, userId } = await newUser();
      const file = await fileWith(api, 'v0');
      for (let i = 1; i <= MAX_VERSIONS + 2; i++) expect((await put(api, file.id, `v${i}`)).status).toBe(200);
      const items = (await versionsOf(api, file.id)).items as Array<{ sha256: string }>;
      expect(items.map((v) => v.sha256)).toEqual([sha256('v4'), sha256('v3'), sha256('v2')]);
      expect((await api.get('/v1/users/me/usage')).body.versionsBytes).toBe(2 * MAX_VERSIONS);
      // The current content and the versions kept; the dropped ones' bytes are gone from the store.
      expect((await stored.keys()).filter((k) => k.includes(file.id))).toHaveLength(1 + MAX_VERSIONS);
      expect(await new UsageRepository(stack.env.db).differences(userId)).toEqual([]);
    });

    describe('with the maintenance worker in this process', () => {
      let maintenance: MaintenanceWorkers;

      beforeAll(async () => {
        maintenance = await startMaintenance(stack.env.config, stack.env.db, createLogger('worker', 'silent'));
      });

      afterAll(async () => {
        await maintenance?.close();
      });

      test('versions older than VERSION_RETENTION_DAYS are expired by the scheduled job, their bytes freed', async () => {
        const { api, userId } = await newUser();
        const file = await fileWith(api, 'old');
        await put(api, file.id, 'new');
        const [v] = (await versionsOf(api, file.id)).items;
        const key = await keyOf(v.id);

        // Eventually: the scheduled expiry of the version.
        expect(await waitFor(async () => (await versionsOf(api, file.id)).total === 0, 20_000, 200)).toBe(true);
        // Eventually: its content off the store.
        expect(await waitFor(async () => !(await stored.exists(key)), 30_000, 200)).toBe(true);
        expect((await api.get('/v1/users/me/usage')).body).toMatchObject({ versionsBytes: 0, filesBytes: 3 });
        expect(await new UsageRepository(stack.env.db).differences(userId)).toEqual([]);
      });
    });
  });
});
