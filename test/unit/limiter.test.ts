import { ConcurrencyLimiter } from '../../services/gateway/auth/limiter';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('ConcurrencyLimiter', () => {
  test('runs at most `max` tasks at once and starts waiting ones in arrival order', async () => {
    const limiter = new ConcurrencyLimiter(2, 10_000);
    const gates = [deferred(), deferred(), deferred()];
    const started: number[] = [];
    const runs = gates.map((g, i) => limiter.run(async () => (started.push(i), g.promise)));
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1]);
    expect(limiter.queued).toBe(1);
    gates[1]!.resolve();
    await runs[1];
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.resolve();
    gates[2]!.resolve();
    await Promise.all(runs);
    expect(limiter.active).toBe(0);
  });

  test('a caller that cannot start within the wait bound gets SERVICE_UNAVAILABLE with Retry-After', async () => {
    const limiter = new ConcurrencyLimiter(1, 20);
    const gate = deferred();
    const first = limiter.run(() => gate.promise);
    await expect(limiter.run(async () => 'late')).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryAfter: 2 });
    expect(limiter.queued).toBe(0);
    gate.resolve();
    await first;
  });

  test('a full waiting line refuses at once', async () => {
    const limiter = new ConcurrencyLimiter(1, 10_000, 1);
    const gate = deferred();
    const first = limiter.run(() => gate.promise);
    const second = limiter.run(async () => 'second');
    await expect(limiter.run(async () => 'third')).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    gate.resolve();
    await expect(second).resolves.toBe('second');
    await first;
  });

  test('a failing task frees its slot', async () => {
    const limiter = new ConcurrencyLimiter(1, 1000);
    await expect(limiter.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limiter.run(async () => 'next')).resolves.toBe('next');
  });
});
