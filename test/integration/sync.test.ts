import { Queue } from 'bullmq';
import { newId } from '../../shared/ids';
import { SYNC_QUEUE_NAME } from '../../shared/queue/ring.contract';
import { redisOptions } from '../../shared/redis/redis.connection';
import { Api } from '../support/client';
import { ADMIN, type RunningGateway, type TestEnv } from '../support/harness';
import { startStack, type TestStack } from '../support/stack';

let env: TestEnv;
let gateway: RunningGateway;
let stack: TestStack;
let api: Api;
let userId: string;
let deviceId: string;
let other: Api;
let nextOpId = 1000;

const opId = () => nextOpId++;
const folder = (resourceId: string, name: string, parentId: string | null = null) => ({
  opId: opId(),
  type: 'create',
  resourceId,
  payload: { resourceType: 'folder', name, parentId },
});
const file = (resourceId: string, name: string, parentId: string | null = null) => ({
  opId: opId(),
  type: 'create',
  resourceId,
  payload: { resourceType: 'file', name, parentId, size: 12, mimeType: 'text/plain' },
});

const send = (ops: unknown[], client = api) => client.post('/v1/sync/ops', { ops });
const row = (id: string) => env.db('resources').where({ id }).first();
const traceCount = (device = deviceId) =>
  env.db('operation_traces').where({ device_id: device }).count({ n: '*' }).then((r) => Number(r[0]!.n));

beforeAll(async () => {
  stack = await startStack();
  ({ env, gateway } = stack);
  ({ api, userId, deviceId } = await stack.admin.createUser('syncer'));
  ({ api: other } = await stack.admin.createUser('someone-else'));
});

afterAll(async () => {
  await stack?.close();
});

describe('applying a batch', () => {
  test('creates folders and files in batch order, each op reported applied with a trace', async () => {
    const [f, x] = [newId(), newId()];
    const ops = [folder(f, 'Docs'), file(x, 'notes.txt', f)];
    const before = await traceCount();

    const res = await send(ops);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      applied: [
        { opId: ops[0]!.opId, type: 'create', resourceId: f, outcome: 'applied', rev: 1 },
        { opId: ops[1]!.opId, type: 'create', resourceId: x, outcome: 'applied', rev: 1 },
      ],
      failed: null,
    });
    expect(await row(f)).toMatchObject({ user_id: userId, type: 'folder', name: 'Docs', parent_id: null, size_bytes: '0', mime_type: null });
    expect(await row(x)).toMatchObject({ user_id: userId, type: 'file', name: 'notes.txt', parent_id: f, size_bytes: '12', mime_type: 'text/plain' });
    expect(await traceCount()).toBe(before + 2);
    const trace = await env.db('operation_traces').where({ device_id: deviceId, operation_id: String(ops[1]!.opId) }).first();
    expect(trace).toMatchObject({ op_type: 'create', resource_id: x, user_id: userId, ref_type: null, ref_id: null });
    expect(JSON.parse(trace.payload)).toEqual(ops[1]!.payload);
  });

  test('retrying a whole applied batch changes nothing and reports every op as duplicate', async () => {
    const [f, x] = [newId(), newId()];
    const ops = [folder(f, 'Retry'), file(x, 'a.txt', f), { opId: opId(), type: 'update', resourceId: x, payload: { name: 'b.txt' } }];
    await send(ops);
    const traces = await traceCount();
    const updatedAt = (await row(x)).updated_at;

    const res = await send(ops);

    expect(res.body.failed).toBeNull();
    expect(res.body.applied.map((a: { outcome: string }) => a.outcome)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(await traceCount()).toBe(traces);
    expect(await row(x)).toMatchObject({ name: 'b.txt', updated_at: updatedAt });
  });

  test('an opId repeated inside one batch is applied once and then reported duplicate', async () => {
    const x = newId();
    const op = file(x, 'twice.txt');
    const res = await send([op, { ...op, resourceId: newId(), payload: { resourceType: 'file', name: 'other.txt' } }]);
    expect(res.body.applied.map((a: { outcome: string }) => a.outcome)).toEqual(['applied', 'duplicate']);
    expect(await env.db('resources').where({ user_id: userId, name: 'other.txt' }).first()).toBeUndefined();
  });

  test('create of a resource id the caller already has, active or deleted, is a no-op', async () => {
    const x = newId();
    await send([file(x, 'exists.txt'), { opId: opId(), type: 'delete', resourceId: x }]);
    const res = await send([file(x, 'again.txt')]);
    expect(res.body.applied[0].outcome).toBe('noop');
    expect(await row(x)).toMatchObject({ name: 'exists.txt' });
    expect((await row(x)).deleted_at).not.toBeNull();
  });

  test("create of a resource id used by another user's resource fails with INVALID_REQUEST", async () => {
    const x = newId();
    await send([file(x, 'mine.txt')], other);
    const res = await send([file(x, 'theirs.txt')]);
    expect(res.body.applied).toEqual([]);
    expect(res.body.failed).toMatchObject({ resourceId: x, type: 'create', error: { code: 'INVALID_REQUEST' } });
    expect(await row(x)).toMatchObject({ name: 'mine.txt' });
  });

  test('update, move and delete of an absent resource are no-ops that still record a trace', async () => {
    const absent = newId();
    const before = await traceCount();
    const res = await send([
      { opId: opId(), type: 'update', resourceId: absent, payload: { name: 'x' } },
      { opId: opId(), type: 'move', resourceId: absent, payload: { parentId: null } },
      { opId: opId(), type: 'delete', resourceId: absent },
    ]);
    expect(res.body.failed).toBeNull();
    expect(res.body.applied.map((a: { outcome: string }) => a.outcome)).toEqual(['noop', 'noop', 'noop']);
    expect(await row(absent)).toBeUndefined();
    expect(await traceCount()).toBe(before + 3);
  });

  test("update of another user's resource is a no-op and does not touch it", async () => {
    const x = newId();
    await send([file(x, 'private.txt')], other);
    const res = await send([{ opId: opId(), type: 'update', resourceId: x, payload: { name: 'stolen.txt' } }]);
    expect(res.body.applied[0].outcome).toBe('noop');
    expect(await row(x)).toMatchObject({ name: 'private.txt' });
  });

  test('delete soft-deletes, and deleting again is a no-op', async () => {
    const x = newId();
    await send([file(x, 'gone.txt')]);
    const first = await send([{ opId: opId(), type: 'delete', resourceId: x }]);
    const deleted = await row(x);
    const second = await send([{ opId: opId(), type: 'delete', resourceId: x }]);
    expect(first.body.applied[0].outcome).toBe('applied');
    expect(second.body.applied[0].outcome).toBe('noop');
    expect(deleted.deleted_at).not.toBeNull();
    expect(deleted.updated_at).toEqual(deleted.deleted_at);
    expect((await row(x)).deleted_at).toEqual(deleted.deleted_at);
  });

  test('share and share_link are acknowledged as no-ops with a trace and no state change', async () => {
    const x = newId();
    await send([file(x, 'shared.txt')]);
    const before = await row(x);
    const res = await send([
      { opId: opId(), type: 'share', resourceId: x, refType: 'contact', refId: 42, payload: { with: 'bob' } },
      { opId: opId(), type: 'share_link', payload: null },
    ]);
    expect(res.body.applied.map((a: { outcome: string }) => a.outcome)).toEqual(['noop', 'noop']);
    expect(await row(x)).toEqual(before);
    const traces = await env.db('operation_traces').whereIn('operation_id', res.body.applied.map((a: { opId: number }) => String(a.opId))).orderBy('operation_id');
    expect(traces.map((t) => [t.op_type, t.ref_type, t.ref_id, t.payload])).toEqual([
      ['share', 'contact', '42', '{"with":"bob"}'],
      ['share_link', null, null, '{}'],
    ]);
  });

  test('rename changes the name and updated_at', async () => {
    const x = newId();
    await send([file(x, 'old.txt')]);
    const before = await row(x);
    await new Promise((r) => setTimeout(r, 5));
    const res = await send([{ opId: opId(), type: 'update', resourceId: x, payload: { name: 'new.txt' } }]);
    const after = await row(x);
    expect(res.body.applied[0].outcome).toBe('applied');
    expect(after.name).toBe('new.txt');
    expect(after.updated_at.getTime()).toBeGreaterThan(before.updated_at.getTime());
    expect(after.created_at).toEqual(before.created_at);
  });

  test('move changes the parent; moving to null puts it at the root', async () => {
    const [f, x] = [newId(), newId()];
    await send([folder(f, 'Target'), file(x, 'mobile.txt')]);
    const into = await send([{ opId: opId(), type: 'move', resourceId: x, payload: { parentId: f } }]);
    expect(into.body.applied[0].outcome).toBe('applied');
    expect((await row(x)).parent_id).toBe(f);
    await send([{ opId: opId(), type: 'move', resourceId: x, payload: { parentId: null } }]);
    expect((await row(x)).parent_id).toBeNull();
  });

  test('a soft-deleted resource does not hold its name', async () => {
    const [a, b] = [newId(), newId()];
    await send([folder(a, 'Reused'), { opId: opId(), type: 'delete', resourceId: a }]);
    const res = await send([folder(b, 'Reused')]);
    expect(res.body.applied[0].outcome).toBe('applied');
  });

  test('deleting a folder soft-deletes its whole subtree with one deleted_at', async () => {
    const [top, mid, leaf, x, y, outside] = [newId(), newId(), newId(), newId(), newId(), newId()];
    await send([folder(top, 'Top'), folder(mid, 'Mid', top), folder(leaf, 'Leaf', mid), file(x, 'x.txt', top), file(y, 'y.txt', leaf), file(outside, 'outside.txt')]);

    const res = await send([{ opId: opId(), type: 'delete', resourceId: top }]);

    expect(res.body.applied[0].outcome).toBe('applied');
    const rows = await env.db('resources').whereIn('id', [top, mid, leaf, x, y]).select('deleted_at', 'updated_at');
    const stamps = new Set(rows.map((r) => r.deleted_at?.getTime()));
    expect(stamps.size).toBe(1);
    expect([...stamps][0]).toEqual(expect.any(Number));
    expect((await row(outside)).deleted_at).toBeNull();
  });

  test('a create inside a folder deleted earlier in the same batch fails with NOT_FOUND', async () => {
    const [f, x] = [newId(), newId()];
    const res = await send([folder(f, 'Short-lived'), { opId: opId(), type: 'delete', resourceId: f }, file(x, 'late.txt', f)]);
    expect(res.body.applied).toHaveLength(2);
    expect(res.body.failed).toMatchObject({ resourceId: x, error: { code: 'NOT_FOUND' } });
    expect(await row(x)).toBeUndefined();
  });
});

describe('stopping at the first failure', () => {
  test('a NAME_CONFLICT is reported in failed and nothing after it is applied', async () => {
    const [a, b, c] = [newId(), newId(), newId()];
    const ops = [file(a, 'same.txt'), file(b, 'same.txt'), file(c, 'after.txt')];
    const before = await traceCount();

    const res = await send(ops);

    expect(res.body.applied).toEqual([{ opId: ops[0]!.opId, type: 'create', resourceId: a, outcome: 'applied', rev: 1 }]);
    expect(res.body.failed).toEqual({
      opId: ops[1]!.opId,
      type: 'create',
      resourceId: b,
      rev: null,
      error: { code: 'NAME_CONFLICT', message: expect.any(String) },
    });
    expect(await row(a)).toBeDefined();
    expect(await row(b)).toBeUndefined();
    expect(await row(c)).toBeUndefined();
    expect(await traceCount()).toBe(before + 1);
  });

  test('a rename onto a sibling name fails with NAME_CONFLICT and leaves both untouched', async () => {
    const [a, b] = [newId(), newId()];
    await send([file(a, 'one.txt'), file(b, 'two.txt')]);
    const res = await send([{ opId: opId(), type: 'update', resourceId: b, payload: { name: 'one.txt' } }]);
    expect(res.body.failed.error.code).toBe('NAME_CONFLICT');
    expect((await row(b)).name).toBe('two.txt');
  });

  test('a move into a missing folder fails with NOT_FOUND', async () => {
    const x = newId();
    await send([file(x, 'stay.txt')]);
    const res = await send([{ opId: opId(), type: 'move', resourceId: x, payload: { parentId: newId() } }]);
    expect(res.body.failed.error.code).toBe('NOT_FOUND');
    expect((await row(x)).parent_id).toBeNull();
  });

  test('moving a folder into itself or into a descendant fails with INVALID_REQUEST', async () => {
    const [a, b] = [newId(), newId()];
    await send([folder(a, 'A'), folder(b, 'B', a)]);
    const self = await send([{ opId: opId(), type: 'move', resourceId: a, payload: { parentId: a } }]);
    const below = await send([{ opId: opId(), type: 'move', resourceId: a, payload: { parentId: b } }]);
    expect(self.body.failed.error.code).toBe('INVALID_REQUEST');
    expect(below.body.failed.error.code).toBe('INVALID_REQUEST');
    expect((await row(a)).parent_id).toBeNull();
  });

  test('a malformed op fails with INVALID_REQUEST at its place; earlier ops stay applied', async () => {
    const a = newId();
    const cases = [
      { opId: opId(), type: 'explode', resourceId: newId() },
      { opId: 'not-a-number', type: 'delete', resourceId: newId() },
      { opId: opId(), type: 'create', resourceId: 'NOT-AN-ID', payload: { resourceType: 'file', name: 'x' } },
      { opId: opId(), type: 'create', resourceId: newId(), payload: { resourceType: 'file', name: 'a/b' } },
      { opId: opId(), type: 'update', resourceId: newId(), payload: {} },
      { opId: opId(), type: 'move', resourceId: newId(), payload: {} },
      { opId: opId(), type: 'delete' },
      { opId: 1.5, type: 'delete', resourceId: newId() },
      'not an object',
    ];
    const first = await send([file(a, 'kept.txt'), cases[0]]);
    expect(first.body.applied).toHaveLength(1);
    expect(first.body.failed).toMatchObject({ opId: (cases[0] as { opId: number }).opId, type: 'explode', error: { code: 'INVALID_REQUEST' } });
    expect(await row(a)).toBeDefined();
    for (const bad of cases.slice(1)) {
      const res = await send([bad]);
      expect(res.status).toBe(200);
      expect(res.body.applied).toEqual([]);
      expect(res.body.failed.error.code).toBe('INVALID_REQUEST');
    }
  });
});

describe('runs of creates, written together', () => {
  test('a clash in the middle of a run applies the creates before it and nothing after', async () => {
    const taken = newId();
    await send([file(taken, 'taken.txt')]);
    const ids = Array.from({ length: 8 }, () => newId());
    const ops = ids.map((id, i) => file(id, i === 4 ? 'taken.txt' : `run-${id}.txt`));

    const res = await send(ops);

    expect(res.body.applied.map((a: { resourceId: string }) => a.resourceId)).toEqual(ids.slice(0, 4));
    expect(res.body.failed).toMatchObject({ opId: ops[4]!.opId, resourceId: ids[4], error: { code: 'NAME_CONFLICT' } });
    const rows = await env.db('resources').whereIn('id', ids).pluck('id');
    expect(rows.sort()).toEqual(ids.slice(0, 4).sort());
    const traced = await env.db('operation_traces').where({ device_id: deviceId }).whereIn('resource_id', ids).pluck('resource_id');
    expect(traced.sort()).toEqual(ids.slice(0, 4).sort());
  });

  test('a folder and its children created in one run all apply, nested as sent', async () => {
    const [top, sub, leaf] = [newId(), newId(), newId()];
    const res = await send([folder(top, 'Nest'), folder(sub, 'Inner', top), file(leaf, 'deep.txt', sub)]);
    expect(res.body.failed).toBeNull();
    expect((await row(leaf)).parent_id).toBe(sub);
    expect((await row(sub)).parent_id).toBe(top);
  });

  test('a batch of 1000 creates applies every one, with a trace each', async () => {
    const parent = newId();
    const ops = [folder(parent, 'Thousand'), ...Array.from({ length: 999 }, (_, i) => file(newId(), `t-${i}.txt`, parent))];
    const before = await traceCount();

    const res = await send(ops);

    expect(res.body.failed).toBeNull();
    expect(res.body.applied).toHaveLength(1000);
    expect(Number((await env.db('resources').where({ parent_id: parent }).count({ n: '*' }))[0]!.n)).toBe(999);
    expect(await traceCount()).toBe(before + 1000);
  });
});

describe('64-bit operation ids', () => {
  test('9007199254740992 and 9007199254740993 are two operations, echoed with all their digits', async () => {
    const [a, b] = [newId(), newId()];
    const body = `{"ops":[
      {"opId":9007199254740992,"type":"create","resourceId":"${a}","payload":{"resourceType":"file","name":"big-a.txt"}},
      {"opId":9007199254740993,"type":"create","resourceId":"${b}","payload":{"resourceType":"file","name":"big-b.txt"}},
      {"opId":"9223372036854775807","type":"share"}
    ]}`;

    const res = await api.request('POST', '/v1/sync/ops', { json: body });

    expect(res.status).toBe(200);
    expect(res.text).toContain('"opId":9007199254740992,');
    expect(res.text).toContain('"opId":9007199254740993,');
    expect(res.text).toContain('"opId":"9223372036854775807",');
    expect(res.text).not.toContain('"failed":{');
    const traces = await env.db('operation_traces').where({ device_id: deviceId }).whereIn('operation_id', ['9007199254740992', '9007199254740993', '9223372036854775807']);
    expect(traces.map((t) => t.operation_id).sort()).toEqual(['9007199254740992', '9007199254740993', '9223372036854775807']);
  });

  test('an opId outside the signed 64-bit range is a malformed op', async () => {
    const res = await api.request('POST', '/v1/sync/ops', { json: '{"ops":[{"opId":9223372036854775808,"type":"share"}]}' });
    expect(res.text).toContain('"opId":9223372036854775808');
    expect(res.body.failed.error.code).toBe('INVALID_REQUEST');
  });
});

describe('the batch envelope', () => {
  test.each([
    ['no ops', { ops: [] }],
    ['more than 1000 ops', { ops: Array.from({ length: 1001 }, (_, i) => ({ opId: i, type: 'share' })) }],
    ['ops not an array', { ops: { opId: 1 } }],
    ['a body that is an array', [{ opId: 1, type: 'share' }]],
  ])('%s gives 400 INVALID_REQUEST and applies nothing', async (_name, body) => {
    const before = await traceCount();
    const res = await api.post('/v1/sync/ops', body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
    expect(await traceCount()).toBe(before);
  });

  test('malformed JSON gives 400 INVALID_REQUEST', async () => {
    const res = await api.request('POST', '/v1/sync/ops', { json: '{"ops":[' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
  });

  test('a batch without a token gives 401', async () => {
    const res = await new Api(gateway.baseUrl).post('/v1/sync/ops', { ops: [{ opId: 1, type: 'share' }] });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  test.each([
    ['its user', (who: { userId: string }) => env.db('users').where({ id: who.userId }).update({ deleted_at: new Date() })],
    ['its device', (who: { deviceId: string }) => env.db('devices').where({ id: who.deviceId }).update({ deleted_at: new Date() })],
  ])('a valid token whose %s was deleted gives 401 for a batch, well-formed or not, and records nothing', async (_what, remove) => {
    const anon = new Api(gateway.baseUrl);
    const admin = await anon.login(ADMIN.username, ADMIN.password);
    const who = await admin.api.createUser(`gone-${newId().slice(0, 8)}`);
    await remove(who);

    const sent = await who.api.post('/v1/sync/ops', { ops: [{ opId: 1, type: 'share' }] });
    const malformed = await who.api.request('POST', '/v1/sync/ops', { json: '{"ops":[' });

    for (const res of [sent, malformed]) {
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
    }
    expect(await env.db('sync_batches').where({ user_id: who.userId }).count({ n: '*' }).then((r) => Number(r[0]!.n))).toBe(0);
  });
});

describe('what reaches the queue', () => {
  test('a batch is recorded in MySQL and the queue carries one ring with its ids only, no ops and no token', async () => {
    const res = await send([{ opId: opId(), type: 'share', refType: 'marker-for-queue-test' }]);
    expect(res.status).toBe(200);
    const batch = await env.db('sync_batches').where('ops', 'like', '%marker-for-queue-test%').first();
    expect(batch).toMatchObject({ user_id: userId, device_id: deviceId, status: 'done' });
    expect(JSON.parse(batch.result).applied[0].outcome).toBe('noop');
    const queue = new Queue(SYNC_QUEUE_NAME, { connection: redisOptions(env.config.redisUrl, 'producer'), prefix: env.config.queuePrefix });
    const jobs = (await queue.getJobs(['completed'])).filter((job) => job.data.batchId === String(batch.id));
    await queue.close();
    expect(jobs).toHaveLength(1);
    const job = jobs[0]!;
    expect(job.id).toBe(`batch-${deviceId}-${batch.id}`);
    expect(Object.keys(job.data).sort()).toEqual(['batchId', 'deviceId', 'requestId', 'userId']);
    expect(job.data).toMatchObject({ userId, deviceId });
    expect(JSON.stringify(job.data)).not.toContain(api.token!);
    expect(job.returnvalue.applied).toEqual([String(batch.id)]);
    expect(job.opts.attempts).toBe(1);
  });
});

describe('the permission snapshot', () => {
  test('lists active resources changed after `after`, newest first, with owner access', async () => {
    const fresh = await createTestEnvUser();
    const [f, x, gone] = [newId(), newId(), newId()];
    await send([folder(f, 'Snap')], fresh);
    await new Promise((r) => setTimeout(r, 5));
    await send([file(x, 'snap.txt', f), file(gone, 'gone.txt'), { opId: opId(), type: 'delete', resourceId: gone }], fresh);

    const all = await fresh.get('/v1/sync/permissions');

    expect(all.status).toBe(200);
    expect(all.body.truncated).toBe(false);
    expect(typeof all.body.cachedAt).toBe('number');
    expect(all.body.items.map((i: { id: string }) => i.id)).toEqual([x, f]);
    const [fileRow, folderRow] = [await row(x), await row(f)];
    expect(all.body.items[0]).toEqual({ id: x, type: 'file', name: 'snap.txt', parentId: f, updatedAt: fileRow.updated_at.getTime(), rev: 1, effectiveAccess: 'owner' });
    expect(all.body.items[1]).toEqual({ id: f, type: 'folder', name: 'Snap', parentId: '', updatedAt: folderRow.updated_at.getTime(), rev: 1, effectiveAccess: 'owner' });

    const after = await fresh.get(`/v1/sync/permissions?after=${folderRow.updated_at.getTime()}`);
    expect(after.body.items.map((i: { id: string }) => i.id)).toEqual([x]);
  });

  test('returns at most 10000 items and says when more matched', async () => {
    const fresh = await createTestEnvUser();
    const owner = (await fresh.get('/v1/sync/permissions')).body;
    expect(owner.items).toEqual([]);
    const { sub } = JSON.parse(Buffer.from(fresh.token!.split('.')[1]!, 'base64url').toString());
    const base = Date.now() - 100_000;
    const rows = Array.from({ length: 10001 }, (_, i) => ({
      id: newId(),
      user_id: sub,
      type: 'file',
      name: `bulk-${i}.txt`,
      created_at: new Date(base + i),
      updated_at: new Date(base + i),
    }));
    for (let i = 0; i < rows.length; i += 2000) await env.db('resources').insert(rows.slice(i, i + 2000));

    const res = await fresh.get('/v1/sync/permissions');

    expect(res.body.truncated).toBe(true);
    expect(res.body.items).toHaveLength(10000);
    expect(res.body.items[0].name).toBe('bulk-10000.txt');
    expect(res.body.items[9999].name).toBe('bulk-1.txt');
  });

  test.each(['-1', 'abc', '1.5'])('after=%s gives 400 INVALID_REQUEST', async (after) => {
    const res = await api.get(`/v1/sync/permissions?after=${after}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
  });
});

async function createTestEnvUser(): Promise<Api> {
  const admin = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
  return (await admin.api.createUser(`snap-${newId().slice(0, 8)}`)).api;
}
