import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import type { TestEnv } from '../support/harness';
import { startStack, type TestStack } from '../support/stack';

/** Folder trees deeper than any recursive query may go (both servers stop a CTE at 1000 levels). */
let env: TestEnv;
let stack: TestStack;
let admin: Api;

beforeAll(async () => {
  stack = await startStack({ SYNC_TIMEOUT_MS: '60000' });
  env = stack.env;
  admin = stack.admin;
});

afterAll(async () => {
  await stack?.close();
});

/** A chain of `depth` nested folders made through sync ops; returns the ids, top first. */
async function chain(api: Api, depth: number): Promise<string[]> {
  const ids = Array.from({ length: depth }, () => newId());
  for (let start = 0; start < depth; start += 1000) {
    const ops = ids.slice(start, start + 1000).map((id, k) => ({
      opId: start + k + 1,
      type: 'create',
      resourceId: id,
      payload: { resourceType: 'folder', name: `level-${start + k}`, parentId: start + k === 0 ? null : ids[start + k - 1] },
    }));
    const res = await api.post('/v1/sync/ops', { ops });
    expect(res.status).toBe(200);
    expect(res.body.failed).toBeNull();
  }
  return ids;
}

describe.each([1500, 3000])('a chain of %i nested folders', (depth) => {
  let api: Api;
  let ids: string[];

  beforeAll(async () => {
    ({ api } = await admin.createUser(`deep-${depth}`));
    ids = await chain(api, depth);
  });

  test('moving the top folder under the bottom one fails with INVALID_REQUEST and changes nothing', async () => {
    const res = await api.post('/v1/sync/ops', { ops: [{ opId: 90001, type: 'move', resourceId: ids[0], payload: { parentId: ids[depth - 1] } }] });

    expect(res.status).toBe(200);
    expect(res.body.applied).toEqual([]);
    expect(res.body.failed).toMatchObject({ opId: 90001, error: { code: 'INVALID_REQUEST' } });
    expect((await env.db('resources').where({ id: ids[0] }).first()).parent_id).toBeNull();
  });

  test('moving a folder deep inside under another deep one that is not its descendant is applied', async () => {
    // Level depth-1 is a leaf; moving it to the top's level keeps the tree a tree.
    const res = await api.post('/v1/sync/ops', { ops: [{ opId: 90002, type: 'move', resourceId: ids[depth - 1], payload: { parentId: ids[0] } }] });
    expect(res.body.failed).toBeNull();
    expect(res.body.applied[0].outcome).toBe('applied');
    const back = await api.post('/v1/sync/ops', { ops: [{ opId: 90003, type: 'move', resourceId: ids[depth - 1], payload: { parentId: ids[depth - 2] } }] });
    expect(back.body.failed).toBeNull();
  });

  test('deleting the top folder deletes every level below it', async () => {
    const res = await api.post('/v1/sync/ops', { ops: [{ opId: 90004, type: 'delete', resourceId: ids[0] }] });

    expect(res.status).toBe(200);
    expect(res.body.failed).toBeNull();
    expect(res.body.applied[0].outcome).toBe('applied');
    const alive = await env.db('resources').whereIn('id', ids).whereNull('deleted_at').count({ n: '*' });
    expect(Number(alive[0]!.n)).toBe(0);
    const stamps = await env.db('resources').whereIn('id', ids).distinct('deleted_at');
    expect(stamps).toHaveLength(1);
  });
});

test('a cycle already stored in the data (two folders each the parent of the other) cannot make a walk loop', async () => {
  const { api, userId } = await admin.createUser('corrupt-tree');
  const [a, b, c] = [newId(), newId(), newId()];
  const res = await api.post('/v1/sync/ops', {
    ops: [
      { opId: 1, type: 'create', resourceId: a, payload: { resourceType: 'folder', name: 'a' } },
      { opId: 2, type: 'create', resourceId: b, payload: { resourceType: 'folder', name: 'b', parentId: a } },
      { opId: 3, type: 'create', resourceId: c, payload: { resourceType: 'folder', name: 'c' } },
    ],
  });
  expect(res.body.failed).toBeNull();
  // Corrupt on purpose, below the service: a becomes b's child while b is a's.
  await env.db('resources').where({ id: a, user_id: userId }).update({ parent_id: b });

  const move = await api.post('/v1/sync/ops', { ops: [{ opId: 4, type: 'move', resourceId: c, payload: { parentId: a } }] });
  expect(move.body.failed).toBeNull();
  const cyc = await api.post('/v1/sync/ops', { ops: [{ opId: 5, type: 'move', resourceId: a, payload: { parentId: c } }] });
  expect(cyc.body.failed).toMatchObject({ error: { code: 'INVALID_REQUEST' } });
  const del = await api.post('/v1/sync/ops', { ops: [{ opId: 6, type: 'delete', resourceId: a }] });

  expect(del.status).toBe(200);
  expect(del.body.failed).toBeNull();
  const alive = await env.db('resources').whereIn('id', [a, b, c]).whereNull('deleted_at').count({ n: '*' });
  expect(Number(alive[0]!.n)).toBe(0);
});
