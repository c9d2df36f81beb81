import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { makeFolders, unzipEntries } from '../support/links';
import { RedisCluster } from '../support/redis.cluster';
import { startInProcessWorkers, type OpenWorker } from '../support/workers';

/**
 * Share links with REDIS_CLUSTER_NODES on a real three-master Redis Cluster and two gateways: unlock
 * attempts are counted in the cluster across both, and every public surface works as on one Redis
 * (the one-node Redis is unreachable, so any use of it would fail).
 */
let cluster: RedisCluster;
let env: TestEnv;
let one: RunningGateway;
let two: RunningGateway;
let workers: OpenWorker;
let api: Api;

beforeAll(async () => {
  cluster = await RedisCluster.start(3, 0);
  env = await createTestEnv({ REDIS_CLUSTER_NODES: cluster.nodes, REDIS_URL: 'redis://127.0.0.1:1', LOGIN_RATE_LIMIT: '3', LOGIN_ADDRESS_RATE_LIMIT: '100' });
  [one, two] = await Promise.all([startGateway(env), startGateway(env)]);
  workers = await startInProcessWorkers(env);
  const admin = (await new Api(one.baseUrl).login(ADMIN.username, ADMIN.password)).api;
  ({ api } = await admin.createUser('clustered'));
});

afterAll(async () => {
  await workers?.close();
  await Promise.all([one?.close(), two?.close()]);
  await env?.dropAll();
  await cluster?.stop();
});

test('a password link: wrong guesses counted across both gateways (429), unlocked on one, used on the other, revoked on one', async () => {
  const folders = await makeFolders(api, ['pics/', 'pics/2026/']);
  expect((await api.upload({ folderId: folders['pics/']! }, { name: 'a.txt', content: 'alpha' })).status).toBe(201);
  expect((await api.upload({ folderId: folders['pics/2026/']! }, { name: 'b.txt', content: 'bravo' })).status).toBe(201);
  const link = (await api.post('/v1/links', { resourceId: folders['pics/'], password: 'cluster password' })).body;
  const [onOne, onTwo] = [new Api(one.baseUrl), new Api(two.baseUrl)];

  const right = await onOne.post(`/v1/public/${link.token}/unlock`, { password: 'cluster password' });
  expect(right.status).toBe(200);
  const bearer = { authorization: `Bearer ${right.body.access}` };
  expect((await onTwo.get(`/v1/public/${link.token}/items`, bearer)).body.total).toBe(2);
  const zip = await fetch(`${two.baseUrl}/v1/public/${link.token}/archive?access=${encodeURIComponent(right.body.access)}`);
  expect(await unzipEntries(Buffer.from(await zip.arrayBuffer()))).toEqual({ 'a.txt': 'alpha', '2026/b.txt': 'bravo' });

  const guesses = await Promise.all([0, 1, 2, 3, 4].map((i) => [onOne, onTwo][i % 2]!.post(`/v1/public/${link.token}/unlock`, { password: `wrong guess ${i}` })));
  const statuses = guesses.map((r) => r.status).sort();
  // The right password above was given back; three wrong ones fill the window.
  expect(statuses).toEqual([401, 401, 401, 429, 429]);
  expect(Number(guesses.find((r) => r.status === 429)!.headers.get('retry-after'))).toBeGreaterThan(0);

  expect((await api.delete(`/v1/links/${link.id}`)).status).toBe(204);
  expect((await onTwo.get(`/v1/public/${link.token}/items`, bearer)).status).toBe(404);
});

test('an upload link through both gateways: every file lands, numbered on a clash', async () => {
  const { 'drop/': dropId } = await makeFolders(api, ['drop/'], 50);
  const link = (await api.post('/v1/links', { resourceId: dropId, access: 'upload' })).body;
  const send = (gateway: RunningGateway, content: string) => {
    const form = new FormData();
    form.append('file', new Blob([content]), 'scan.png');
    return new Api(gateway.baseUrl).request('POST', `/v1/public/${link.token}/files`, { body: form });
  };
  const sent = await Promise.all([send(one, '1'), send(two, '22'), send(one, '333'), send(two, '4444')]);
  expect(sent.map((r) => r.status)).toEqual([201, 201, 201, 201]);
  expect(sent.map((r) => r.body.name).sort()).toEqual(['scan (2).png', 'scan (3).png', 'scan (4).png', 'scan.png']);
  expect((await api.get(`/v1/files?folderId=${dropId}`)).body.total).toBe(4);
});
