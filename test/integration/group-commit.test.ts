import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { DerivedRepair } from '../../shared/db/derived/derived.repair';
import { UsageLedger } from '../../shared/quota/usage.ledger';
import { beforeCommit, OwnerTransactions, type ChangeClock } from '../../shared/db/owner.transaction';
import { ResourceRepository } from '../../shared/db/repositories/resource.repository';
import { UsageRepository } from '../../shared/quota/usage.repository';
import { newId } from '../../shared/ids';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { startStack, type TestStack } from '../support/stack';

/**
 * Writes of one owner that wait at the same moment share one transaction (OwnerTransactions.runTogether,
 * which every upload goes through), each behind a savepoint: what one write does, or fails to do, must
 * stay its own.
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startStack();
});

afterAll(async () => {
  await stack?.close();
});

const changeSeq = async (userId: string, on = stack): Promise<number> =>
  Number((await on.env.db('users').where({ id: userId }).first('change_seq')).change_seq);

const activeFiles = (userId: string, on = stack) =>
  on.env.db('resources').where({ user_id: userId, type: 'file' }).whereNull('deleted_at').orderBy('change_seq').select('name', 'change_seq', 'size_bytes');

test('writes waiting together share one transaction; the one that fails is undone alone, feed positions stay contiguous and derived data exact', async () => {
  const { userId, deviceId } = await stack.admin.createUser('together-direct');
  const owners = new OwnerTransactions(stack.env.db);
  const before = await changeSeq(userId);
  const seen: Knex.Transaction[] = [];
  const insertFile = async (trx: Knex.Transaction, clock: ChangeClock, name: string) => {
    seen.push(trx);
    await new ResourceRepository(trx).insert({
      id: newId(), userId, parentId: null, type: 'file', name, sizeBytes: 0, mimeType: null,
      extension: null, storageKey: null, contentSha256: null, createdAt: new Date(), change: clock.next(),
    });
    return name;
  };
  const author = { userId, deviceId };
  const outcomes = await Promise.allSettled([
    owners.runTogether(author, (trx, clock) => insertFile(trx, clock, 'first-alone.txt')),
    owners.runTogether(author, (trx, clock) => insertFile(trx, clock, 'second.txt')),
    owners.runTogether(author, async (trx, clock) => {
      await insertFile(trx, clock, 'doomed-write.txt');
      await insertFile(trx, clock, 'doomed-other.txt');
      await UsageLedger.of(trx).add(userId, 'files', 12_345);
      throw new Error('refused on purpose');
    }),
    owners.runTogether(author, (trx, clock) => insertFile(trx, clock, 'fourth.txt')),
  ]);

  expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  expect((outcomes[2] as PromiseRejectedResult).reason.message).toBe('refused on purpose');
  // The first started at once and alone; the three that came while it ran went into one transaction.
  expect(seen[0]).not.toBe(seen[1]);
  expect(new Set(seen.slice(1))).toEqual(new Set([seen[1]]));

  const rows = await activeFiles(userId);
  expect(rows.map((r: { name: string }) => r.name)).toEqual(['first-alone.txt', 'second.txt', 'fourth.txt']);
  // The failed write's positions were given back: no gap in the feed.
  expect(rows.map((r: { change_seq: number }) => Number(r.change_seq))).toEqual([before + 1, before + 2, before + 3]);
  expect(await changeSeq(userId)).toBe(before + 3);
  // Its bytes, search entries and folder counts went with it.
  expect(await new UsageRepository(stack.env.db).differences(userId)).toEqual([]);
  expect(await new DerivedRepair(stack.env.db).run({ fix: false, userIds: [userId] })).toMatchObject({ counts: [], index: [] });
});

test('steps before the commit run for the writes that stay, not for one undone; a failing step rolls the whole group back', async () => {
  const { userId, deviceId } = await stack.admin.createUser('together-steps');
  const owners = new OwnerTransactions(stack.env.db);
  const author = { userId, deviceId };
  const ran: string[] = [];
  const write = (name: string, opts: { fail?: boolean; failStep?: boolean } = {}) =>
    owners.runTogether(author, async (trx, clock) => {
      await new ResourceRepository(trx).insert({
        id: newId(), userId, parentId: null, type: 'file', name, sizeBytes: 0, mimeType: null,
        extension: null, storageKey: null, contentSha256: null, createdAt: new Date(), change: clock.next(),
      });
      await beforeCommit(trx, async () => {
        if (opts.failStep) throw new Error(`step of ${name} failed`);
        ran.push(name);
      });
      if (opts.fail) throw new Error(`${name} refused`);
      return name;
    });

  const first = await Promise.allSettled([write('a.txt'), write('b.txt'), write('c.txt', { fail: true }), write('d.txt')]);
  expect(first.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  expect(ran.sort()).toEqual(['a.txt', 'b.txt', 'd.txt']);

  ran.length = 0;
  // Once the first group's turn is over, the next write again starts alone.
  await new Promise((resolve) => setImmediate(resolve));
  const second = await Promise.allSettled([write('e.txt'), write('f.txt'), write('g.txt', { failStep: true }), write('h.txt')]);
  expect(second.map((o) => (o.status === 'rejected' ? (o.reason as Error).message : o.value))).toEqual(['e.txt', 'step of g.txt failed', 'step of g.txt failed', 'step of g.txt failed']);
  expect((await activeFiles(userId)).map((r: { name: string }) => r.name).sort()).toEqual(['a.txt', 'b.txt', 'd.txt', 'e.txt']);
});

test('rerunnable writes together insert their rows in one statement; a name taken twice in the group fails that write alone', async () => {
  const { userId, deviceId } = await stack.admin.createUser('together-inserts');
  const owners = new OwnerTransactions(stack.env.db);
  const author = { userId, deviceId };
  const inserts: string[] = [];
  const onQuery = (q: { sql: string }) => {
    if (/^insert into `resources`/i.test(q.sql)) inserts.push(q.sql);
  };
  const write = (name: string) =>
    owners.runTogether(author, async (trx, clock) => {
      await new ResourceRepository(trx).insert({
        id: newId(), userId, parentId: null, type: 'file', name, sizeBytes: 10, mimeType: null,
        extension: null, storageKey: `k/${newId()}`, contentSha256: 'a'.repeat(64), createdAt: new Date(), change: clock.next(),
      });
      return name;
    }, { rerunnable: true });
  stack.env.db.on('query', onQuery);
  try {
    // The first runs alone; the five that wait meanwhile share one transaction and one INSERT.
    const first = await Promise.allSettled(['a', 'b', 'c', 'd', 'e', 'f'].map((n) => write(`${n}.txt`)));
    expect(first.map((o) => o.status)).toEqual(Array(6).fill('fulfilled'));
    expect(inserts).toHaveLength(2);

    await new Promise((resolve) => setImmediate(resolve));
    inserts.length = 0;
    // The group's one INSERT is refused; run again, each write behind its savepoint, the clash is the second's alone.
    const second = await Promise.allSettled(['g.txt', 'h.txt', 'x.txt', 'x.txt', 'a.txt', 'i.txt'].map(write));
    expect(second.map((o) => (o.status === 'rejected' ? (o.reason as { code?: string }).code : o.value))).toEqual(['g.txt', 'h.txt', 'x.txt', 'NAME_CONFLICT', 'NAME_CONFLICT', 'i.txt']);
    expect(inserts.length).toBeGreaterThan(2);
  } finally {
    stack.env.db.off('query', onQuery);
  }
  const names = (await activeFiles(userId)).map((r: { name: string }) => r.name).sort();
  expect(names).toEqual(['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt', 'f.txt', 'g.txt', 'h.txt', 'i.txt', 'x.txt']);
  expect(await new UsageRepository(stack.env.db).differences(userId)).toEqual([]);
  expect(await new DerivedRepair(stack.env.db).run({ fix: false, userIds: [userId] })).toMatchObject({ counts: [], index: [] });
});

test('a lone write that fails rolls back its whole transaction, as run does', async () => {
  const { userId, deviceId } = await stack.admin.createUser('together-alone');
  const owners = new OwnerTransactions(stack.env.db);
  const before = await changeSeq(userId);
  await expect(
    owners.runTogether({ userId, deviceId }, async (trx, clock) => {
      await new ResourceRepository(trx).insert({
        id: newId(), userId, parentId: null, type: 'file', name: 'never.txt', sizeBytes: 0, mimeType: null,
        extension: null, storageKey: null, contentSha256: null, createdAt: new Date(), change: clock.next(),
      });
      throw new Error('no');
    }),
  ).rejects.toThrow('no');
  expect(await activeFiles(userId)).toEqual([]);
  expect(await changeSeq(userId)).toBe(before);
});

describe.each(DRIVERS)('uploads on the %s driver', (driver) => {
  let http: TestStack;

  beforeAll(async () => {
    http = await startStack(onDriver(driver));
  });

  afterAll(async () => {
    await http?.close();
  });

  test('parallel uploads of one user, some refused by a name clash or the quota, commit exactly the others: content, counters, feed and index', async () => {
    const { api, userId } = await http.admin.createUser('together-http');
    const size = 1000;
    // Room for exactly 9 of the uploads below.
    expect((await http.admin.patch(`/v1/users/${userId}`, { quotaBytes: 9 * size + size / 2 })).status).toBe(200);
    const before = await changeSeq(userId, http);
    // Four uploads share a name: one gets it, the others 409 (or 507, if the quota refused them
    // first). Ten others have names of their own, so exactly 9 of all fit.
    const bodies = Array.from({ length: 14 }, (_, i) => Buffer.alloc(size, 65 + i));
    const names = bodies.map((_, i) => (i < 4 ? 'clash.bin' : `own-${i}.bin`));
    const answers = await Promise.all(bodies.map((content, i) => api.upload({}, { name: names[i]!, content })));
    const statuses = answers.map((r) => r.status);

    expect(statuses.filter((s) => ![201, 409, 507].includes(s))).toEqual([]);
    expect(statuses.slice(0, 4).filter((s) => s === 201).length).toBeLessThanOrEqual(1);
    const created = answers.filter((r) => r.status === 201);
    expect(created).toHaveLength(9);

    // Every accepted upload is there with its own bytes; no refused one left a row or bytes behind.
    for (const r of created) {
      const i = bodies.findIndex((b) => createHash('sha256').update(b).digest('hex') === r.body.sha256);
      expect(i).toBeGreaterThanOrEqual(0);
      const got = await api.request('GET', `/v1/files/${r.body.id}/content`);
      expect(got.status).toBe(200);
      expect(got.text).toBe(bodies[i]!.toString('latin1'));
    }
    const rows = await activeFiles(userId, http);
    expect(rows).toHaveLength(9);
    expect(rows.map((r: { change_seq: number }) => Number(r.change_seq))).toEqual(Array.from({ length: 9 }, (_, i) => before + 1 + i));
    expect(await changeSeq(userId, http)).toBe(before + 9);
    expect((await api.get('/v1/users/me/usage')).body.usedBytes).toBe(9 * size);
    expect(await new UsageRepository(http.env.db).differences(userId)).toEqual([]);
    expect(await new DerivedRepair(http.env.db).run({ fix: false, userIds: [userId] })).toMatchObject({ counts: [], index: [] });
    const keys = (await http.env.db('resources').where({ user_id: userId, type: 'file' }).pluck('storage_key')).sort();
    const stored = new StoredContent(http.env);
    expect((await stored.keys()).filter((k) => !k.startsWith('.'))).toEqual(keys);
  });
});
