import { Api } from '../support/client';
import { ADMIN, createTestEnv, type TestEnv } from '../support/harness';
import { spawnGateway, stopProcess, type GatewayProcess } from '../support/processes';
import { Device, prng } from '../support/replica';
import { spawnWorker, stopWorker, type WorkerProcess } from '../support/workers';

/**
 * Devices that make random changes offline and then sync through the outbox (renames, moves and
 * deletes conditional on baseRev), PUT content and the change feed, against two gateways and two
 * workers, end up with exactly the server's tree; and their own changes cost them nothing in the
 * feed (recognised by deviceId and the rev their results reported). CONVERGENCE_SEED replays a run;
 * CONVERGENCE_ROUNDS makes it longer.
 */
const SEED = Number(process.env.CONVERGENCE_SEED ?? Math.floor(Math.random() * 2 ** 31));
const ROUNDS = Number(process.env.CONVERGENCE_ROUNDS ?? 6);
const CHANGES_PER_ROUND = 6;

let env: TestEnv;
let gateways: GatewayProcess[];
let workers: WorkerProcess[];

beforeAll(async () => {
  env = await createTestEnv();
  gateways = await Promise.all([spawnGateway(env), spawnGateway(env)]);
  workers = await Promise.all([spawnWorker(env), spawnWorker(env)]);
});

afterAll(async () => {
  await Promise.all([...(gateways ?? []).map((g) => stopProcess(g)), ...(workers ?? []).map((w) => stopWorker(w))]);
  await env.dropAll();
});

async function serverTree(userId: string) {
  const rows = await env.db('resources')
    .where({ user_id: userId })
    .whereNull('deleted_at')
    .select<{ id: string; type: string; name: string; parent_id: string | null; content_sha256: string | null }[]>('id', 'type', 'name', 'parent_id', 'content_sha256');
  return Object.fromEntries(rows.map((r) => [r.id, { type: r.type, name: r.name, parentId: r.parent_id, sha256: r.content_sha256 }]));
}

test(`four devices of two users converge on the server's tree (seed ${SEED})`, async () => {
  const random = prng(SEED);
  const admin = (await new Api(gateways[0]!.baseUrl).login(ADMIN.username, ADMIN.password)).api;
  const devices: Array<{ device: Device; userId: string }> = [];
  for (const user of ['alice', 'bob']) {
    const created = await admin.createUser(`conv-${user}`);
    for (let d = 0; d < 2; d++) {
      const gateway = gateways[(devices.length + d) % 2]!;
      const session = d === 0 ? created : await new Api(gateway.baseUrl).login(`conv-${user}`, 'user-password-1');
      const device = new Device(`${user}-${d}`, new Api(gateway.baseUrl, session.token), prng(Math.floor(random() * 2 ** 31)), session.deviceId);
      devices.push({ device, userId: created.userId });
    }
  }

  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const { device } of devices) device.changeOffline(CHANGES_PER_ROUND);
      // Devices come back online at once, in an order of the seed's choosing.
      const order = [...devices].sort(() => random() - 0.5);
      await Promise.all(order.map(({ device }) => device.sync()));
    }
    for (const { device } of devices) await device.pull();

    for (const { device, userId } of devices) {
      const expected = await serverTree(userId);
      expect({ device: device.label, tree: device.snapshot() }).toEqual({ device: device.label, tree: expected });
    }
    expect(Object.keys(await serverTree(devices[0]!.userId)).length).toBeGreaterThan(0);
    const costs = Object.fromEntries(devices.map(({ device }) => [device.label, device.cost]));
    // Own changes cost nothing: never applied again, and plenty recognised and skipped.
    for (const cost of Object.values(costs)) expect(cost.wastedOwn).toBe(0);
    expect(Object.values(costs).reduce((n, c) => n + c.skippedOwn, 0)).toBeGreaterThan(0);
    process.stdout.write(`feed items per device (seed ${SEED}): ${JSON.stringify(costs)}\n`);
  } catch (err) {
    throw new Error(`convergence failed with CONVERGENCE_SEED=${SEED}: ${(err as Error).message}`);
  }
});
