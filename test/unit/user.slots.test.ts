import { UserSlots, userWriteGate } from '../../shared/fairness/user.slots';
import { isAppError } from '../../shared/errors';

test('a user gets at most perUser slots, and another user is not affected', () => {
  const slots = new UserSlots(2);
  expect([slots.tryTake('alice'), slots.tryTake('alice'), slots.tryTake('alice')]).toEqual([true, true, false]);
  expect(slots.tryTake('bob')).toBe(true);
  slots.release('alice');
  expect(slots.tryTake('alice')).toBe(true);
});

test('a released slot goes to the oldest waiter of that user, first come first served', async () => {
  const slots = new UserSlots(1);
  slots.tryTake('alice');
  const order: number[] = [];
  const first = slots.take('alice', 10_000, 10).then((ok) => order.push(1) && ok);
  const second = slots.take('alice', 10_000, 10).then((ok) => order.push(2) && ok);
  slots.release('alice');
  expect(await first).toBe(true);
  expect(slots.inUse('alice')).toBe(1);
  slots.release('alice');
  expect(await second).toBe(true);
  expect(order).toEqual([1, 2]);
  slots.release('alice');
  expect(slots.inUse('alice')).toBe(0);
});

test('a waiter gives up after its wait, and one beyond the queue bound at once', async () => {
  const slots = new UserSlots(1);
  slots.tryTake('alice');
  const waiting = slots.take('alice', 30, 1);
  expect(await slots.take('alice', 10_000, 1)).toBe(false);
  expect(await waiting).toBe(false);
  expect(slots.queued('alice')).toBe(0);
});

test('the gateway gate answers 503 with Retry-After when the wait runs out', async () => {
  const slots = new UserSlots(1);
  const gate = userWriteGate(slots, 20);
  const leave = await gate.enter('alice');
  const refused = await gate.enter('alice').then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isAppError(refused) && refused.status === 503 && refused.retryAfter === 2).toBe(true);
  leave();
  leave();
  expect(slots.inUse('alice')).toBe(0);
});
