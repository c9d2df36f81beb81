import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, type TestEnv } from '../support/harness';
import { spawnGateway, stopProcess, type GatewayProcess } from '../support/processes';
import { spawnWorker, stopWorker, type WorkerProcess } from '../support/workers';

/** The feed across real processes: two gateways and two workers on one database and one Redis. */
let env: TestEnv;
let gateways: GatewayProcess[];
let workers: WorkerProcess[];
let admin: Api;
let nextOpId = 1;
let userCount = 0;

interface Change {
  id: string;
  rev: number;
  deleted: boolean;
  name: string;
}

const createFile = (id: string, name: string) => ({ opId: nextOpId++, type: 'create', resourceId: id, payload: { resourceType: 'file', name } });

async function feed(api: Api, query: string): Promise<{ items: Change[]; cursor: string; hasMore: boolean }> {
  const res = await api.get(`/v1/sync/changes?${query}`);
  if (res.status !== 200) throw new Error(`feed answered ${res.status}: ${res.text}`);
  return res.body;
}

async function newUserOn(baseUrls: string[]) {
  const username = `proc-feeder-${++userCount}`;
  const created = await admin.createUser(username);
  return { ...created, username, on: baseUrls.map((url) => new Api(url, created.token)) };
}

beforeAll(async () => {
  env = await createTestEnv();
  gateways = await Promise.all([spawnGateway(env), spawnGateway(env)]);
  workers = await Promise.all([spawnWorker(env, { WORKER_PORT: '0' }), spawnWorker(env, { WORKER_PORT: '0' })]);
  admin = (await new Api(gateways[0]!.baseUrl).login(ADMIN.username, ADMIN.password)).api;
});

afterAll(async () => {
  await Promise.all([...(gateways ?? []).map((g) => stopProcess(g)), ...(workers ?? []).map((w) => stopWorker(w))]);
  await env.dropAll();
});

test('an upload through one gateway wakes a request held by the other gateway', async () => {
  const { on } = await newUserOn(gateways.map((g) => g.baseUrl));
  const [a, b] = on as [Api, Api];
  const { cursor } = await feed(a, '');
  const held = feed(a, `cursor=${cursor}&wait=30`);
  await new Promise((r) => setTimeout(r, 300));

  const up = await b.upload({}, { name: 'x.txt', content: 'hello' });
  const started = Date.now();
  const page = await held;

  expect(up.status).toBe(201);
  expect(page.items.map((i) => i.id)).toEqual([up.body.id]);
  expect(Date.now() - started).toBeLessThan(5000);
});

test('a sync batch applied by a worker process wakes a held request', async () => {
  const { on } = await newUserOn([gateways[1]!.baseUrl]);
  const api = on[0]!;
  const { cursor } = await feed(api, '');
  const held = feed(api, `cursor=${cursor}&wait=30`);
  await new Promise((r) => setTimeout(r, 300));
  const id = newId();

  const res = await api.post('/v1/sync/ops', { ops: [createFile(id, 'from-worker.txt')] });
  const page = await held;

  expect(res.body.failed).toBeNull();
  expect(page.items.map((i) => i.id)).toEqual([id]);
});

test('following the feed with limit=1 while two devices and uploads write at once never skips a change', async () => {
  const user = await newUserOn(gateways.map((g) => g.baseUrl));
  // A second device of the same user, writing through the other gateway.
  const second = await new Api(gateways[1]!.baseUrl).login(user.username, 'user-password-1');
  const writers = [user.on[0]!, second.api];
  const seen = new Map<string, Change>();
  let cursor = (await feed(user.on[1]!, 'limit=1')).cursor;
  let writing = true;

  const reader = (async () => {
    for (;;) {
      const page = await feed(user.on[1]!, `cursor=${cursor}&limit=1`);
      for (const item of page.items) seen.set(item.id, item);
      cursor = page.cursor;
      if (!page.hasMore && !writing) return;
    }
  })();
  await Promise.all([
    ...writers.map(async (api, w) => {
      for (let round = 0; round < 8; round++) {
        const ids = [newId(), newId()];
        const res = await api.post('/v1/sync/ops', {
          ops: [createFile(ids[0]!, `w${w}-r${round}-a`), createFile(ids[1]!, `w${w}-r${round}-b`), { opId: nextOpId++, type: 'update', resourceId: ids[0], payload: { name: `w${w}-r${round}-a2` } }],
        });
        expect(res.body.failed).toBeNull();
      }
    }),
    (async () => {
      for (let i = 0; i < 8; i++) expect((await user.on[i % 2]!.upload({}, { name: `up-${i}.txt`, content: `u${i}` })).status).toBe(201);
    })(),
  ]);
  writing = false;
  await reader;

  const rows = await env.db('resources').where({ user_id: user.userId }).select('id', 'rev', 'name');
  expect(rows).toHaveLength(8 * 2 * 2 + 8);
  const latest = Object.fromEntries(rows.map((r: { id: string; rev: number; name: string }) => [r.id, [r.name, r.rev]]));
  expect(Object.fromEntries([...seen.values()].map((c) => [c.id, [c.name, c.rev]]))).toEqual(latest);
});

test('a gateway stopping answers its held requests at once instead of at the end of their wait', async () => {
  const extra = await spawnGateway(env);
  const { on } = await newUserOn([extra.baseUrl]);
  const api = on[0]!;
  const { cursor } = await feed(api, '');
  const started = Date.now();
  const held = api.get(`/v1/sync/changes?cursor=${cursor}&wait=60`);
  await new Promise((r) => setTimeout(r, 300));

  await stopProcess(extra, 'SIGTERM');
  const res = await held;

  expect(res.status).toBe(200);
  expect(res.body).toEqual({ items: [], cursor, hasMore: false });
  expect(Date.now() - started).toBeLessThan(20_000);
  expect(await extra.exited).toBe(0);
});
