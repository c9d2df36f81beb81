import { newId } from '../../shared/ids';
import { UsageRepository } from '../../shared/quota/usage.repository';
import type { Api } from '../support/client';
import { startStack, type TestStack } from '../support/stack';
import { TusRaw } from '../support/tus';

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack();
});

afterAll(async () => {
  await stack?.close();
});

const WRITE = 1000;
const QUOTA = 20 * WRITE;
/** Room left before the race: three writes fit, the fourth does not. */
const ROOM = 3 * WRITE + WRITE / 2;
const ROUNDS = 5;

/** Files created by sync ops hold no bytes; PUT gives them content, adding its bytes as an upload does. */
async function emptyFiles(api: Api, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => newId());
  const ops = ids.map((id, i) => ({ opId: i + 1, type: 'create', resourceId: id, payload: { resourceType: 'file', name: `empty-${i}.bin`, parentId: null } }));
  expect((await api.post('/v1/sync/ops', { ops })).body.failed).toBeNull();
  return ids;
}

test.each(Array.from({ length: ROUNDS }, (_, i) => i + 1))(
  'round %i: parallel multipart uploads, PUTs and tus creations racing for the last bytes never take usage above the quota together',
  async () => {
    const user = await stack.admin.createUser(`r${newId().slice(0, 12)}`);
    const { api, userId } = user;
    expect((await stack.admin.patch(`/v1/users/${userId}`, { quotaBytes: QUOTA })).status).toBe(200);
    expect((await api.upload({}, { name: 'base.bin', content: Buffer.alloc(QUOTA - ROOM) })).status).toBe(201);
    const targets = await emptyFiles(api, 4);
    const tus = new TusRaw(api);

    const writes: Array<Promise<number>> = [];
    for (let i = 0; i < 4; i++) {
      writes.push(api.upload({}, { name: `m-${i}.bin`, content: Buffer.alloc(WRITE, i) }).then((r) => r.status));
      writes.push(api.request('PUT', `/v1/files/${targets[i]}/content`, { body: Buffer.alloc(WRITE, i) }).then((r) => r.status));
      writes.push(tus.create(WRITE, { name: `t-${i}.bin` }).then((r) => r.status));
    }
    const statuses = await Promise.all(writes);

    const accepted = statuses.filter((s) => s === 200 || s === 201).length;
    expect(statuses.filter((s) => ![200, 201, 507].includes(s))).toEqual([]);
    // Each write fits alone; together exactly as many as the room holds get in.
    expect(accepted).toBe(3);
    const usage = (await api.get('/v1/users/me/usage')).body;
    expect(usage.usedBytes).toBeLessThanOrEqual(QUOTA);
    expect(usage.usedBytes).toBe(QUOTA - ROOM + accepted * WRITE);
    expect(await new UsageRepository(stack.env.db).differences(userId)).toEqual([]);
  },
);
