import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { makeFolders } from '../support/links';
import { startInProcessWorkers, type OpenWorker } from '../support/workers';

/**
 * Share links on two gateways of one service: every way a link dies (unknown, revoked, expired, used
 * up, trashed, purged) answers the same 404 on both at once, whichever gateway the change went
 * through, and a restore brings it back on both; unlock attempts are counted across them.
 */
const GONE = { error: { code: 'NOT_FOUND', message: 'no such link, or it is no longer available' } };

describe('share links across gateways', () => {
  let env: TestEnv;
  let one: RunningGateway;
  let two: RunningGateway;
  let workers: OpenWorker;
  let api: Api;
  /** The owner's API on each gateway, and anonymous visitors on each. */
  let owner: [Api, Api];
  let visitors: [Api, Api];
  let opId = 1;

  /** The link's info and content on both gateways: 200 and `content`, or the one 404 every dead link gives. */
  async function expectOnBoth(token: string, content: string | undefined): Promise<void> {
    for (const visitor of visitors) {
      const info = await visitor.get(`/v1/public/${token}`);
      const bytes = await visitor.get(`/v1/public/${token}/content`);
      if (content === undefined) {
        expect({ at: visitor.baseUrl, status: info.status, body: info.body }).toEqual({ at: visitor.baseUrl, status: 404, body: GONE });
        expect({ at: visitor.baseUrl, status: bytes.status, body: bytes.body }).toEqual({ at: visitor.baseUrl, status: 404, body: GONE });
      } else {
        expect({ at: visitor.baseUrl, status: info.status, bytes: bytes.status, text: bytes.text }).toEqual({ at: visitor.baseUrl, status: 200, bytes: 200, text: content });
      }
    }
  }

  async function fileWithLink(name: string, options: Record<string, unknown> = {}): Promise<{ fileId: string; link: { id: string; token: string } }> {
    const file = (await api.upload({}, { name, content: name })).body;
    const created = await owner[0].post('/v1/links', { resourceId: file.id, ...options });
    expect(created.status).toBe(201);
    return { fileId: file.id, link: created.body };
  }

  const trash = async (via: Api, resourceId: string) => {
    const res = await via.post('/v1/sync/ops', { ops: [{ opId: opId++, type: 'delete', resourceId }] });
    expect(res.status).toBe(200);
    expect(res.body.failed ?? []).toEqual([]);
  };

  beforeAll(async () => {
    env = await createTestEnv({ LOGIN_RATE_LIMIT: '3', LOGIN_ADDRESS_RATE_LIMIT: '100' });
    one = await startGateway(env);
    two = await startGateway(env);
    workers = await startInProcessWorkers(env);
    const admin = (await new Api(one.baseUrl).login(ADMIN.username, ADMIN.password)).api;
    ({ api } = await admin.createUser('twogates'));
    owner = [api, new Api(two.baseUrl, api.token)];
    visitors = [new Api(one.baseUrl), new Api(two.baseUrl)];
  });

  afterAll(async () => {
    await workers?.close();
    await one?.close();
    await two?.close();
    await env?.dropAll();
  });

  test('revoked on one gateway, the token is 404 on both at once', async () => {
    const { link } = await fileWithLink('x.txt');
    await expectOnBoth(link.token, 'x.txt');
    expect((await owner[0].delete(`/v1/links/${link.id}`)).status).toBe(204);
    await expectOnBoth(link.token, undefined);
  });

  test('an unknown token is the same 404 on both', async () => {
    await expectOnBoth('A'.repeat(24), undefined);
  });

  test('expired through one gateway, 404 on both as soon as the time passes; a later expiry set on the other brings it back', async () => {
    const { link } = await fileWithLink('soon.txt');
    await expectOnBoth(link.token, 'soon.txt');
    expect((await owner[0].patch(`/v1/links/${link.id}`, { expiresAt: new Date(Date.now() + 1000).toISOString() })).status).toBe(200);
    await expectOnBoth(link.token, 'soon.txt');
    await new Promise((r) => setTimeout(r, 1100));
    await expectOnBoth(link.token, undefined);
    // Still listed for its owner, who can move the expiry from either gateway.
    expect((await owner[1].get(`/v1/links/${link.id}`)).status).toBe(200);
    expect((await owner[1].patch(`/v1/links/${link.id}`, { expiresAt: new Date(Date.now() + 3600_000).toISOString() })).status).toBe(200);
    await expectOnBoth(link.token, 'soon.txt');
  });

  test('the last download taken on one gateway ends the link on both; a higher limit set on the other brings it back on both', async () => {
    const { link } = await fileWithLink('limited.txt', { maxDownloads: 1 });
    expect((await visitors[1].get(`/v1/public/${link.token}/content`)).text).toBe('limited.txt');
    await expectOnBoth(link.token, undefined);
    expect((await owner[0].get(`/v1/links/${link.id}`)).body).toMatchObject({ downloads: 1, maxDownloads: 1 });
    expect((await owner[1].patch(`/v1/links/${link.id}`, { maxDownloads: 10 })).status).toBe(200);
    for (const visitor of visitors) expect((await visitor.get(`/v1/public/${link.token}/content`)).text).toBe('limited.txt');
  });

  test('trashed through one gateway, 404 on both; restored through the other, back on both; a trashed parent folder ends it too', async () => {
    const { fileId, link } = await fileWithLink('binned.txt');
    await expectOnBoth(link.token, 'binned.txt');
    await trash(owner[0], fileId);
    await expectOnBoth(link.token, undefined);
    expect((await owner[1].post(`/v1/trash/${fileId}/restore`)).status).toBe(200);
    await expectOnBoth(link.token, 'binned.txt');

    const [folderId] = Object.values(await makeFolders(api, ['binned-folder/'], 1000));
    const inside = (await api.upload({ folderId: folderId! }, { name: 'inside.txt', content: 'inside' })).body;
    const insideLink = (await owner[1].post('/v1/links', { resourceId: inside.id })).body;
    await expectOnBoth(insideLink.token, 'inside');
    await trash(owner[1], folderId!);
    await expectOnBoth(insideLink.token, undefined);
    expect((await owner[0].post(`/v1/trash/${folderId}/restore`)).status).toBe(200);
    await expectOnBoth(insideLink.token, 'inside');
  });

  test('purged through one gateway, 404 on both and the link gone from the owner\'s list on both', async () => {
    const { fileId, link } = await fileWithLink('purged.txt');
    await expectOnBoth(link.token, 'purged.txt');
    await trash(owner[1], fileId);
    expect((await owner[1].delete(`/v1/trash/${fileId}`)).status).toBe(204);
    await expectOnBoth(link.token, undefined);
    for (const via of owner) {
      expect((await via.get(`/v1/links/${link.id}`)).status).toBe(404);
      const listed = await via.get('/v1/links');
      expect(listed.status).toBe(200);
      expect(JSON.stringify(listed.body)).not.toContain(link.id);
    }
  });

  test('password attempts are counted per link across gateways before any check: 429 with Retry-After', async () => {
    const file = (await api.upload({}, { name: 'y.txt', content: 'y' })).body;
    const link = (await api.post('/v1/links', { resourceId: file.id, password: 'the right one' })).body;
    const gateways = [new Api(one.baseUrl), new Api(two.baseUrl)];
    const burst = await Promise.all(
      Array.from({ length: 8 }, (_, i) => gateways[i % 2]!.post(`/v1/public/${link.token}/unlock`, { password: `wrong guess ${i}` })),
    );
    const statuses = burst.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 401)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    const limited = burst.find((r) => r.status === 429)!;
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(limited.headers.get('cache-control')).toBe('no-store');
    // Even the right password waits for the window now.
    expect((await gateways[0]!.post(`/v1/public/${link.token}/unlock`, { password: 'the right one' })).status).toBe(429);
  });
});
