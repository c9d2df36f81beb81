import { randomBytes } from 'node:crypto';
import { Api } from '../support/client';
import { startStack, type TestStack } from '../support/stack';

/**
 * A service started on a new database beside the Redis of an earlier one (a database restored or
 * recreated, the queue's keys kept): its batch ids start again from 1 while the earlier service's
 * finished rings are still kept (shared/queue/ring.contract.ts). A ring must never be taken for one
 * of those, or the batch waits until the gateway gives up.
 */
let first: TestStack | undefined;
let second: TestStack | undefined;
afterAll(async () => {
  await second?.close();
  await first?.close();
});

async function oneBatch(stack: TestStack): Promise<{ status: number; outcome: unknown }> {
  const username = `fresh${randomBytes(4).toString('hex')}`;
  await stack.admin.createUser(username);
  const { api } = await new Api(stack.gateway.baseUrl).login(username, 'user-password-1');
  const res = await api.post('/v1/sync/ops', { ops: [{ opId: '1', type: 'create', resourceId: randomBytes(16).toString('hex'), payload: { resourceType: 'folder', name: 'Docs', parentId: null } }] });
  return { status: res.status, outcome: res.body?.applied?.[0]?.outcome };
}

test('the first batches on a new database are applied at once beside the rings an earlier one left', async () => {
  first = await startStack();
  expect(await oneBatch(first)).toEqual({ status: 200, outcome: 'applied' });
  // Stopped, its finished rings left in Redis under its prefix.
  await first.workers.close();
  await first.gateway.close();

  second = await startStack({ QUEUE_PREFIX: first.env.config.queuePrefix });
  const started = Date.now();
  expect(await oneBatch(second)).toEqual({ status: 200, outcome: 'applied' });
  expect(Date.now() - started).toBeLessThan(10_000);
});
