import type { Knex } from 'knex';
import { ContentRepository } from '../../shared/db/repositories/content.repository';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { ReservationRepository } from '../../shared/quota/reservation.repository';
import { UsageRepository } from '../../shared/quota/usage.repository';
import { newId } from '../../shared/ids';
import { UploadReservations } from '../../shared/quota/upload.reservations';
import { createContentStore } from '../../shared/storage/store.factory';
import { Fsck } from '../../services/maintenance/fsck';
import { DerivedRepair } from '../../shared/db/derived/derived.repair';
import { Api } from '../support/client';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import { ADMIN, createTestEnv, type TestEnv } from '../support/harness';
import { waitFor } from '../support/fixtures';
import { spawnGateway, stopProcess, type GatewayProcess } from '../support/processes';
import { TusRaw } from '../support/tus';

describe.each(DRIVERS)('recovery after a crash on the %s driver', (driver) => {
  let env: TestEnv;
  let gateway: GatewayProcess | undefined;
  let stored: StoredContent;

  beforeAll(async () => {
    env = await createTestEnv(onDriver(driver));
    stored = new StoredContent(env);
  });

  afterAll(async () => {
    if (gateway) await stopProcess(gateway, 'SIGKILL');
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await env?.dropAll();
  });

  const usage = () => new UsageRepository(env.db);
  const fsck = (repair: boolean) =>
    new Fsck(createContentStore(env.config), new ContentRepository(env.db), new OwnerTransactions(env.db), usage(), new DerivedRepair(env.db)).run({
      repair,
      orphanMinAgeMs: 0,
      stagingMinAgeMs: 0,
    });

  /** Runs `work` while a transaction of the test holds `lock` (a locking read), then rolls it back. */
  async function whileLocked(lock: (trx: Knex.Transaction) => Promise<unknown>, work: () => Promise<void>): Promise<void> {
    const trx = await env.db.transaction();
    try {
      await lock(trx);
      await work();
    } finally {
      await trx.rollback();
    }
  }

  async function startGatewayAndUser() {
    // One gateway at a time: a test that did not kill its own stops it here, or it outlives the run.
    if (gateway) await stopProcess(gateway, 'SIGKILL');
    gateway = await spawnGateway(env);
    const { api: admin } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
    const user = await admin.createUser(`k${newId().slice(0, 12)}`);
    expect((await admin.patch(`/v1/users/${user.userId}`, { quotaBytes: 1_000_000 })).status).toBe(200);
    return user;
  }

  test('a gateway killed after the content was written under its key and before the commit leaves the counters exact', async () => {
    const { api, userId, deviceId } = await startGatewayAndUser();
    expect((await api.upload({}, { name: 'first.bin', content: Buffer.alloc(100) })).status).toBe(201);
    const before = await usage().read(userId);
    const id = newId();
    const key = `${deviceId}/${id}.bin`;

    // The upload's transaction places the bytes, then adds its file to the root's count before it
    // commits: holding that count's row stops it exactly between the two.
    await whileLocked(
      (trx) => trx('folder_file_counts').where({ user_id: userId, parent_key: '' }).forUpdate().select('files'),
      async () => {
        const pending = api.upload({ id }, { name: 'second.bin', content: Buffer.alloc(5000, 3) }).catch(() => undefined);
        // Eventually: the content placed under its key.
        expect(await waitFor(() => stored.exists(key), 20_000, 200)).toBe(true);
        await stopProcess(gateway!, 'SIGKILL');
        gateway = undefined;
        await pending;
      },
    );

    expect(await env.db('resources').where({ id }).first()).toBeUndefined();
    expect(await usage().read(userId)).toEqual(before);
    expect(await usage().differences(userId)).toEqual([]);
    // What the crash left is content no row names, which fsck removes; counters need nothing.
    const report = await fsck(true);
    expect(report.orphans).toContain(key);
    expect(report.usageDrift).toEqual([]);
    expect(await stored.exists(key)).toBe(false);
    expect(await stored.staging()).toEqual([]);
    expect(await stored.unfinishedMultipartUploads()).toEqual([]);
  });

  test('a gateway killed while completing a resumable upload leaves its reservation counted until it expires', async () => {
    const { api, userId } = await startGatewayAndUser();
    const tus = new TusRaw(api);
    const location = await tus.start(2000, { name: 'resumed.bin' });
    expect((await usage().read(userId))?.uploads).toBe(2000);

    await whileLocked(
      (trx) => trx('users').where({ id: userId }).forUpdate().select('id'),
      async () => {
        const pending = tus.patch(location, 0, Buffer.alloc(2000, 9)).catch(() => undefined);
        // The last byte arrived (the completion waits for the owner's lock): kill the gateway there.
        // Eventually: the upload complete in the store.
        const complete = async () => (await stored.store.stat(`.tus/${location.split('/').pop()!}`))?.size === 2000;
        expect(await waitFor(complete, 20_000, 200)).toBe(true);
        await stopProcess(gateway!, 'SIGKILL');
        gateway = undefined;
        await pending;
      },
    );

    expect(await usage().read(userId)).toMatchObject({ files: 0, uploads: 2000 });
    expect(await usage().differences(userId)).toEqual([]);
    // The expiry job ends reservations by age, whatever is left of the upload.
    const released = await new UploadReservations(new OwnerTransactions(env.db), new ReservationRepository(env.db), createContentStore(env.config)).expire(
      new Date(Date.now() + 1000),
    );
    expect(released).toBeGreaterThanOrEqual(1);
    expect(await usage().read(userId)).toMatchObject({ uploads: 0 });
    expect(await usage().differences(userId)).toEqual([]);
  });

  test('fsck finds a counter that was tampered with, and --repair corrects the counter only', async () => {
    const user = await startGatewayAndUser();
    expect((await user.api.upload({}, { name: 'a.bin', content: Buffer.alloc(321) })).status).toBe(201);
    await env.db('users').where({ id: user.userId }).update({ files_bytes: 999, versions_bytes: 5 });

    const found = await fsck(false);
    expect(found.usageDrift).toEqual(
      expect.arrayContaining([
        { userId: user.userId, kind: 'files', stored: 999, actual: 321 },
        { userId: user.userId, kind: 'versions', stored: 5, actual: 0 },
      ]),
    );
    expect((await usage().read(user.userId))?.files).toBe(999);

    const repaired = await fsck(true);
    expect(repaired.repaired).toMatchObject({ usageRepaired: 1, orphansRemoved: 0, contentCleared: 0 });
    expect(await usage().read(user.userId)).toMatchObject({ files: 321, versions: 0 });
    expect((await fsck(false)).usageDrift).toEqual([]);
    expect((await user.api.get('/v1/users/me/usage')).body).toMatchObject({ usedBytes: 321, filesBytes: 321 });
  });

  test('fsck reports a version whose content is gone, and --repair drops it with its bytes', async () => {
    const user = await startGatewayAndUser();
    const file = (await user.api.upload({}, { name: 'v.txt', content: 'first content' })).body as { id: string };
    expect((await user.api.request('PUT', `/v1/files/${file.id}/content`, { body: Buffer.from('second') })).status).toBe(200);
    const version = await env.db('file_versions').where({ file_id: file.id }).first();
    await stored.store.remove(version.storage_key);

    const found = await fsck(false);
    expect(found.missingVersions).toEqual([{ id: version.id, userId: user.userId, storageKey: version.storage_key }]);

    const repaired = await fsck(true);
    expect(repaired.repaired).toMatchObject({ versionsDropped: 1 });
    expect(await env.db('file_versions').where({ file_id: file.id }).select('id')).toEqual([]);
    expect((await user.api.get('/v1/users/me/usage')).body).toMatchObject({ versionsBytes: 0, filesBytes: 6 });
    expect(await usage().differences(user.userId)).toEqual([]);
  });
});
