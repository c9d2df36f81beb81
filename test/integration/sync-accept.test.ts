import { InboxRepository } from '../../shared/db/repositories/inbox.repository';
import { STATEMENTS, type StatementName } from '../../shared/db/statement.tags';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from '../support/harness';
import { untilStatementRunning } from '../support/statements';

/**
 * The accept path's ordering, on the database itself: a batch is recorded by one autocommit
 * INSERT ... SELECT ... FOR UPDATE that numbers it only once it holds the device row, and a worker's
 * locking read of a device's pending batches waits for a lower batch that is not committed yet.
 */
let env: TestEnv;
let gateway: RunningGateway;
let device: { userId: string; deviceId: string };
let neighbour: { userId: string; deviceId: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const batch = (requestId: string) => ({ deviceId: device.deviceId, userId: device.userId, requestId, ops: '[]', createdAt: new Date() });
/** Records a batch of the test's device, which exists: accept must give its id. */
const record = async (requestId: string): Promise<string> => {
  const id = await new InboxRepository(env.db).accept(batch(requestId));
  if (id === undefined) throw new Error(`batch ${requestId} was not recorded`);
  return id;
};

beforeAll(async () => {
  env = await createTestEnv();
  gateway = await startGateway(env);
  const admin = (await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password)).api;
  const { userId, deviceId } = await admin.createUser('accept-user');
  device = { userId, deviceId };
  const other = await admin.createUser('accept-neighbour');
  neighbour = { userId: other.userId, deviceId: other.deviceId };
});

afterAll(async () => {
  await gateway.close();
  await env.dropAll();
});

/** Waits until the statement tagged `name` runs on this database (blocked on a lock). */
const untilRunning = (name: StatementName) => untilStatementRunning(env.db, env.name, [name]);

test('accept waits for the device row and takes its id only once it holds it', async () => {
  const holder = await env.db.transaction();
  let waiting: Promise<string>;
  let held: string;
  try {
    await holder('devices').where({ id: device.deviceId }).forUpdate().first('id');
    waiting = record('second');
    await untilRunning(STATEMENTS.acceptBatch);
    // The holder records a batch of its own while the autocommit INSERT waits for the device row.
    const [id] = await holder('sync_batches').insert({ ...batchRow('first') });
    held = String(id);
    const [{ n }] = await env.db('sync_batches').where({ request_id: 'second' }).count({ n: '*' });
    expect(Number(n)).toBe(0);
    await holder.commit();
  } catch (err) {
    await holder.rollback();
    throw err;
  }
  const second = await waiting;
  // Numbered after the batch committed first: id order is acceptance (and commit) order.
  expect(BigInt(second)).toBeGreaterThan(BigInt(held));
  const rows = await env.db('sync_batches').whereIn('request_id', ['first', 'second']).orderBy('id').select('request_id', 'status', 'device_id', 'user_id');
  expect(rows).toEqual([
    { request_id: 'first', status: 'pending', device_id: device.deviceId, user_id: device.userId },
    { request_id: 'second', status: 'pending', device_id: device.deviceId, user_id: device.userId },
  ]);
});

const lockReads: Array<[string, StatementName, (inbox: InboxRepository, upToId: string) => Promise<string[]>]> = [
  ['the pending batches alone', STATEMENTS.lockPending, async (inbox, upTo) => (await inbox.lockPending(device.deviceId, device.userId, upTo)).map((x) => x.id)],
  [
    "the owner's row with the pending batches",
    STATEMENTS.lockOwnerAndPending,
    async (inbox, upTo) => (await inbox.lockOwnerAndPending(device.userId, device.deviceId, upTo))!.batches.map((x) => x.id),
  ],
];

test.each(lockReads)("a worker's locking read of %s waits for an uncommitted lower batch and then sees it", async (_what, statement, lockRead) => {
  const writer = await env.db.transaction();
  let lower: string;
  let upper: string;
  let read: Promise<string[]>;
  const reader = await env.db.transaction();
  try {
    // An insert that has its id but has not committed (what the device lock prevents on the accept path).
    const [id] = await writer('sync_batches').insert(batchRow('uncommitted'));
    lower = String(id);
    upper = await record('committed');
    expect(BigInt(upper)).toBeGreaterThan(BigInt(lower));
    read = lockRead(new InboxRepository(reader), upper);
    await untilRunning(statement);
    let settled = false;
    void read.then(() => (settled = true));
    await sleep(200);
    expect(settled).toBe(false);
    await writer.commit();
  } catch (err) {
    await writer.rollback().catch(() => undefined);
    await reader.rollback().catch(() => undefined);
    throw err;
  }
  const ids = await read;
  await reader.commit();
  expect(ids.slice(-2)).toEqual([lower, upper]);
});

test.each(lockReads)("a worker's locking read of %s neither locks nor waits for another device's pending batches", async (_what, _statement, lockRead) => {
  // Many finished batches of both devices and pending ones interleaved: the shape in which a plan by
  // status alone (all pending batches up to the id) looks as cheap as the device's own index.
  const rows = [];
  for (let i = 0; i < 300; i++) rows.push({ ...batchRow(`done-${i}`), status: 'done' }, { ...batchRow(`n-done-${i}`, neighbour), status: 'done' });
  await env.db.batchInsert('sync_batches', rows, 200);
  for (let i = 0; i < 3; i++) {
    await env.db('sync_batches').insert(batchRow(`n-pending-${i}`, neighbour));
    await env.db('sync_batches').insert(batchRow(`pending-${i}`));
  }
  await env.db.raw('ANALYZE TABLE sync_batches');
  const [{ top }] = await env.db('sync_batches').max({ top: 'id' });
  const ours = (await env.db('sync_batches').where({ device_id: device.deviceId, status: 'pending' }).orderBy('id').pluck('id')).map(String);

  // The neighbour's ring holds its device's pending batches.
  const holder = await env.db.transaction();
  const reader = await env.db.transaction();
  try {
    await new InboxRepository(holder).lockPending(neighbour.deviceId, neighbour.userId, String(top));
    await reader.raw('SET SESSION innodb_lock_wait_timeout = 1');
    expect(await lockRead(new InboxRepository(reader), String(top))).toEqual(ours);
  } finally {
    await reader.rollback().catch(() => undefined);
    await holder.rollback().catch(() => undefined);
    await env.db('sync_batches').where({ status: 'pending' }).update({ status: 'done' });
  }
});

function batchRow(requestId: string, of = device) {
  return { device_id: of.deviceId, user_id: of.userId, status: 'pending', ops: '[]', request_id: requestId, created_at: new Date() };
}
