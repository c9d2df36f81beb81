import { TogetherQueues, type TogetherLimits, type TogetherWrite } from '../../shared/db/group.commit';

/** A commit that records each group and holds it until released, then settles every write with its index. */
function heldCommits() {
  const groups: TogetherWrite[][] = [];
  const releases: Array<() => void> = [];
  const commit = (_userId: string, writes: TogetherWrite[]) =>
    new Promise<void>((done) => {
      groups.push(writes);
      releases.push(() => {
        writes.forEach((w, i) => w.resolve(i));
        done();
      });
    });
  return { groups, releases, commit };
}

const refused = () => new Error('refused');
const author = (userId = 'u1') => ({ userId, deviceId: 'd1' });
const work = async () => 'value';
const limits = (over: Partial<TogetherLimits> = {}): TogetherLimits => ({ maxPerTransaction: 16, maxWaiting: 256, maxWaitMs: 60_000, refusal: refused, ...over });
const tick = () => new Promise((r) => setImmediate(r));

test('the first write goes alone at once; the ones arriving while it commits go together, at most maxPerTransaction per group', async () => {
  const { groups, releases, commit } = heldCommits();
  const queues = new TogetherQueues(commit, limits({ maxPerTransaction: 3 }));
  const all = Array.from({ length: 6 }, () => queues.submit(author(), work));
  await tick();
  expect(groups.map((g) => g.length)).toEqual([1]);
  releases[0]!();
  await tick();
  expect(groups.map((g) => g.length)).toEqual([1, 3]);
  releases[1]!();
  await tick();
  expect(groups.map((g) => g.length)).toEqual([1, 3, 2]);
  releases[2]!();
  expect(await Promise.all(all)).toEqual([0, 0, 1, 2, 0, 1]);
});

test('owners do not wait for each other', async () => {
  const { groups, commit } = heldCommits();
  const queues = new TogetherQueues(commit, limits());
  void queues.submit(author('alice'), work);
  void queues.submit(author('bob'), work);
  await tick();
  expect(groups.map((g) => g.map((w) => w.author.userId))).toEqual([['alice'], ['bob']]);
});

test('a write waiting longer than maxWaitMs is refused, and one past maxWaiting at once', async () => {
  jest.useFakeTimers();
  try {
    const { groups, releases, commit } = heldCommits();
    const queues = new TogetherQueues(commit, limits({ maxWaitMs: 1000, maxWaiting: 2 }));
    const first = queues.submit(author(), work);
    const waiting = [queues.submit(author(), work), queues.submit(author(), work)];
    await expect(queues.submit(author(), work)).rejects.toThrow('refused');
    jest.advanceTimersByTime(1001);
    for (const w of waiting) await expect(w).rejects.toThrow('refused');
    releases[0]!();
    await expect(first).resolves.toBe(0);
    expect(groups).toHaveLength(1);
  } finally {
    jest.useRealTimers();
  }
});

test('with maxWaitMs 0 no write is held: each is committed on its own at once', async () => {
  const { groups, commit } = heldCommits();
  const queues = new TogetherQueues(commit, limits({ maxWaitMs: 0 }));
  for (let i = 0; i < 3; i++) void queues.submit(author(), work);
  await tick();
  expect(groups.map((g) => g.length)).toEqual([1, 1, 1]);
});

test('a commit that fails rejects every write of its group, and the next group still runs', async () => {
  let calls = 0;
  const queues = new TogetherQueues(async (_u, writes) => {
    calls++;
    if (calls === 2) throw new Error('connection lost');
    await tick();
    writes.forEach((w) => w.resolve('ok'));
  }, limits({ maxPerTransaction: 2 }));
  const results = await Promise.allSettled(Array.from({ length: 5 }, () => queues.submit(author(), work)));
  expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['ok', 'connection lost', 'connection lost', 'ok', 'ok']);
});
