import { execFile } from 'node:child_process';
import { DerivedRepair } from '../../shared/db/derived/derived.repair';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { ContentRepository } from '../../shared/db/repositories/content.repository';
import { OwnerTransactions } from '../../shared/db/owner.transaction';
import { UsageRepository } from '../../shared/quota/usage.repository';
import { newId } from '../../shared/ids';
import { createContentStore } from '../../shared/storage/store.factory';
import { Fsck } from '../../services/maintenance/fsck';
import { Api } from '../support/client';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';
import type { TestEnv } from '../support/harness';
import {
  changesSince,
  createFolder,
  deleteBySync,
  deleteFile,
  feedCursorNow,
  resourceRow,
  uploadFile,
} from '../support/lifecycle';
import { startStack, type TestStack } from '../support/stack';

/** `npm run fsck`: content files no resource points at, resources whose content file is missing. */
const FSCK_MAIN = path.join(__dirname, '..', '..', 'dist', 'services', 'maintenance', 'fsck.main.js');
const CLOCK_AHEAD = path.join(__dirname, '..', 'support', 'clock-ahead.js');
const HOURS_2 = 2 * 3600_000;

describe.each(DRIVERS)('fsck on the %s driver', (driver) => {
  let env: TestEnv;
  let stack: TestStack;
  let api: Api;
  let deviceId: string;
  let stored: StoredContent;

  /**
   * Runs the compiled command (`npm test` builds first) against the test's database and store. On S3,
   * where planted objects cannot be dated back, the command's clock runs two hours ahead instead.
   */
  function runFsck(args: string[] = []): Promise<{ code: number; stdout: string }> {
    const ahead = driver === 's3' ? ['--require', CLOCK_AHEAD] : [];
    return new Promise((resolve) => {
      execFile(process.execPath, [...ahead, FSCK_MAIN, ...args], { env: { ...process.env, ...env.env, FILESYNC_TEST_CLOCK_AHEAD_MS: String(HOURS_2) } }, (err, stdout) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout });
      });
    });
  }

  /**
   * Writes an object as a crash or another program leaves it, dated `ageMs` ago: on disk by its mtime,
   * the one date a test can set; on S3 every planted object is as old as the command's clock makes it.
   */
  async function plant(key: string, ageMs: number): Promise<string> {
    await stored.plant(key, 'planted');
    if (driver === 'local') {
      const when = new Date(Date.now() - ageMs);
      await fs.utimes(path.join(env.uploadDir, key), when, when);
    }
    return key;
  }

  beforeAll(async () => {
    stack = await startStack(onDriver(driver));
    env = stack.env;
    stored = new StoredContent(env);
    ({ api, deviceId } = await stack.admin.createUser('checker'));
  });

  afterAll(async () => {
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await stack?.close();
  });

  test('after uploads, deletes, restores and purges the store is consistent, even with no grace period for young files', async () => {
    const folder = await createFolder(api, 'Work');
    const sub = await createFolder(api, 'sub', folder);
    const files = await Promise.all(['a.txt', 'b.txt', 'c.txt'].map((n, i) => uploadFile(api, n, `content ${i}`, i === 0 ? folder : sub)));
    const loose = await uploadFile(api, 'loose.txt', 'loose');
    const purgedOne = await uploadFile(api, 'purged.txt', 'purged');
    await deleteFile(api, loose.id);
    await deleteFile(api, purgedOne.id);
    expect((await api.delete(`/v1/trash/${purgedOne.id}`)).status).toBe(204);
    await deleteBySync(api, folder);
    expect((await api.post(`/v1/trash/${sub}/restore`)).status).toBe(200);
    await uploadFile(api, 'rejected.txt', 'x', newId()).catch(() => undefined); // 404: nothing may stay behind

    const report = await new Fsck(createContentStore(env.config), new ContentRepository(env.db), new OwnerTransactions(env.db), new UsageRepository(env.db), new DerivedRepair(env.db)).run({
      repair: false,
      orphanMinAgeMs: 0,
      stagingMinAgeMs: 0,
    });

    expect(report).toMatchObject({ orphans: [], missing: [], repaired: null });
    expect(report.files).toBe(files.length + 1); // a, b, c, and loose.txt in the trash; the purged file is gone
    expect(report.resources).toBe(files.length + 1);
    expect((await runFsck()).code).toBe(0);
  });

  describe('a planted orphan and a removed content file', () => {
    let orphan: string;
    let staleStaging: string;
    /** Young objects may belong to a commit in flight; only on disk can a test plant old and young ones side by side. */
    let young: string[];
    let youngOrphan: string | undefined;
    let tusPart: string;
    let victim: { id: string; rev: number };
    let victimKey: string;
    let cursor: string;

    beforeAll(async () => {
      orphan = await plant(`${deviceId}/${newId()}.bin`, HOURS_2);
      staleStaging = await plant(`.staging/${newId()}.part`, HOURS_2);
      young = [];
      if (driver === 'local') {
        youngOrphan = await plant(`${deviceId}/${newId()}.tmp`, 0);
        young.push(await plant(`.staging/${newId()}.part`, 0), youngOrphan);
      }
      tusPart = await plant(`.tus/${newId()}`, HOURS_2);
      victim = await uploadFile(api, 'victim.txt', 'will vanish');
      victimKey = (await resourceRow(env, victim.id)).storage_key!;
      await stored.store.remove(victimKey);
      cursor = await feedCursorNow(api);
    });

    test('fsck reports both and exits non-zero, and changes nothing', async () => {
      const { code, stdout } = await runFsck();

      expect(code).toBe(1);
      expect(stdout).toContain(`orphan file: ${orphan}`);
      expect(stdout).toContain(`orphan file: ${staleStaging}`);
      expect(stdout).toContain(`missing content: resource ${victim.id}`);
      // Young files may belong to a commit in flight, and other components' upload folders are not ours.
      for (const key of [...young, tusPart]) expect(stdout).not.toContain(key);
      expect(stdout).toContain('found 2 orphan files and 1 resources with missing content');
      expect(await stored.exists(orphan)).toBe(true);
      expect((await resourceRow(env, victim.id)).storage_key).toBe(victimKey);
    });

    if (driver === 'local') {
      test('--min-age=0 also reports a young orphan', async () => {
        const { code, stdout } = await runFsck(['--min-age=0']);
        expect(code).toBe(1);
        expect(stdout).toContain(`orphan file: ${youngOrphan}`);
      });
    }

    test('--repair removes the orphans and detaches the missing content, as a change in the feed; then fsck is clean', async () => {
      const { code, stdout } = await runFsck(['--repair']);

      expect(code).toBe(0);
      expect(stdout).toContain('repaired: removed 2 orphan files; detached the missing content of 1 resources');
      expect(await stored.exists(orphan)).toBe(false);
      expect(await stored.exists(staleStaging)).toBe(false);
      for (const key of [...young, tusPart]) expect(await stored.exists(key)).toBe(true);
      expect(await resourceRow(env, victim.id)).toMatchObject({ storage_key: null, rev: victim.rev + 1 });
      const file = await api.get(`/v1/files/${victim.id}`);
      expect(file.body).toMatchObject({ size: 0, rev: victim.rev + 1 });
      expect(file.body.sha256).toBeUndefined();
      expect((await api.get(`/v1/files/${victim.id}/content`)).status).toBe(404);
      const change = (await changesSince(api, cursor)).get(victim.id);
      expect(change).toMatchObject({ deleted: false, rev: victim.rev + 1, size: 0 });
      expect(change?.sha256).toBeUndefined();

      expect((await runFsck()).code).toBe(0);
    });
  });
});
