import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import { DRIVERS, onDriver, scratchStore, StoredContent, type ScratchStore } from '../support/drivers';
import { ADMIN, createTestEnv, type TestEnv } from '../support/harness';
import { uploadFile } from '../support/lifecycle';
import { spawnGateway, stopProcess } from '../support/processes';
import { startStack, type TestStack } from '../support/stack';

const DIST = path.join(__dirname, '..', '..', 'dist');
const CLOCK_AHEAD = path.join(__dirname, '..', 'support', 'clock-ahead.js');
const MARKER = '.filesync-store';

/** The content store's marker: fsck and the services refuse a store that is not the database's. */
describe.each(DRIVERS)('the store marker on the %s driver', (driver) => {
  let stack: TestStack;
  let env: TestEnv;
  let api: Api;
  let deviceId: string;
  let stored: StoredContent;
  const scratch: ScratchStore[] = [];

  /** Runs a compiled entry point to its end against the test's database, with `extra` settings. */
  function run(main: string, args: string[], extra: Record<string, string> = {}): Promise<{ code: number; output: string }> {
    // On S3, where a planted object cannot be dated back, the command's clock runs two hours ahead instead.
    const ahead = driver === 's3' ? ['--require', CLOCK_AHEAD] : [];
    const settings = { PORT: '0', WORKER_PORT: '0', FILESYNC_TEST_CLOCK_AHEAD_MS: String(2 * 3600_000), ...extra };
    return new Promise((resolve) => {
      execFile(process.execPath, [...ahead, path.join(DIST, main), ...args], { env: { ...process.env, ...env.env, ...settings }, timeout: 60_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` });
      });
    });
  }

  const fsck = (args: string[] = [], extra: Record<string, string> = {}) => run('services/maintenance/fsck.main.js', args, extra);

  /** Another, empty store on the test's driver (a folder, or a prefix of the bucket). */
  async function emptyStore(options: { missing?: boolean } = {}): Promise<ScratchStore> {
    const store = await scratchStore(env, options);
    scratch.push(store);
    return store;
  }

  /** The settings that point a process at the test's own store. */
  const ownStore = (): Record<string, string> => (driver === 's3' ? { S3_PREFIX: env.config.s3!.prefix } : { UPLOAD_DIR: env.uploadDir });

  /** Every resource's content columns, and every content file's bytes: what a refusal must leave as it was. */
  async function snapshot(): Promise<{ rows: unknown[]; files: Record<string, string> }> {
    const rows = await env.db('resources').orderBy('id').select('id', 'storage_key', 'rev', 'size_bytes', 'content_sha256');
    const files: Record<string, string> = {};
    for (const row of rows as { storage_key: string | null }[]) {
      if (!row.storage_key) continue;
      files[row.storage_key] = (await stored.text(row.storage_key)) ?? '<absent>';
    }
    return { rows, files };
  }

  beforeAll(async () => {
    stack = await startStack(onDriver(driver));
    env = stack.env;
    stored = new StoredContent(env);
    ({ api, deviceId } = await stack.admin.createUser('marked'));
    for (let i = 0; i < 4; i++) await uploadFile(api, `kept-${i}.txt`, `content ${i}`);
  });

  afterAll(async () => {
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
    await stack?.close();
    await Promise.all(scratch.map((store) => store.drop()));
  });

  test('the first start marks the store with the id the database records', async () => {
    const row = await env.db('content_store').first();
    expect(row.store_id).toMatch(/^[0-9a-f]{32}$/);
    expect(await stored.store.readMarker()).toBe(row.store_id);
    // On S3 the marker is an object beside the content, under the prefix.
    if (driver === 's3') expect(await stored.objectKeys()).toContain(`${env.config.s3!.prefix}${MARKER}`);
  });

  describe('fsck on a store that is not the database\'s', () => {
    test.each([
      ['an empty store (a volume not mounted, a wrong prefix)', async () => emptyStore()],
      ['the store of another database', async () => {
        const other = await emptyStore();
        await other.stored.store.claimMarker(newId());
        return other;
      }],
    ])('%s: --repair exits 3, says why, and changes no row and no byte', async (_label, arrange) => {
      const wrong = await arrange();
      const before = await snapshot();
      const markerBefore = await wrong.stored.everything();

      const repair = await fsck(['--repair'], wrong.setting);
      const check = await fsck([], wrong.setting);

      expect(repair.code).toBe(3);
      expect(repair.output).toContain('is not this database\'s content store');
      expect(repair.output).not.toContain('repaired:');
      expect(check.code).toBe(3);
      expect(await snapshot()).toEqual(before);
      expect(await wrong.stored.everything()).toEqual(markerBefore);
      // The real store is still whole: a check there finds nothing wrong.
      expect((await fsck()).code).toBe(0);
    });
  });

  describe('fsck on a damaged store', () => {
    let removed: string[];
    let orphan: string;

    beforeAll(async () => {
      const rows = await env.db('resources').whereNotNull('storage_key').select<{ storage_key: string }[]>('storage_key');
      removed = rows.slice(0, 3).map((r) => r.storage_key);
      for (const key of removed) await stored.store.remove(key);
      orphan = `${deviceId}/${newId()}.bin`;
      await stored.plant(orphan, 'orphan');
      if (driver === 'local') {
        const old = new Date(Date.now() - 2 * 3600_000);
        await fs.utimes(path.join(env.uploadDir, orphan), old, old);
      }
    });

    test('with more than a tenth of the content missing, --repair refuses (exit 3) and changes no row and no byte', async () => {
      const before = await snapshot();

      const { code, output } = await fsck(['--repair']);

      expect(code).toBe(3);
      expect(output).toContain(`${removed.length} of 4 resources have no content in the store, more than a tenth`);
      expect(output).toContain('--allow-many-missing');
      expect(await snapshot()).toEqual(before);
      expect(await stored.exists(orphan)).toBe(true);
    });

    // A key that cannot be looked up at all (ENOTDIR) has no counterpart in an object store: on disk only.
    const onDiskOnly = (name: string, fn: () => Promise<void>) => driver === 'local' && test(name, fn);
    onDiskOnly('a file that cannot be read is a failure (exit 2), not missing content', async () => {
      const rows = await env.db('resources').whereNotNull('storage_key').select<{ storage_key: string }[]>('storage_key');
      const present = rows.map((r) => r.storage_key).find((k) => !removed.includes(k))!;
      // A folder replaced by a file: looking up the key fails with ENOTDIR, not "no such file".
      const folder = path.join(env.uploadDir, 'blocked');
      await fs.mkdir(folder);
      await fs.writeFile(path.join(folder, 'x'), '');
      await env.db('resources').where({ storage_key: present }).update({ storage_key: 'blocked/x/inner.txt' });
      const before = await snapshot();
      try {
        const { code, output } = await fsck(['--repair', '--allow-many-missing']);

        expect(code).toBe(2);
        expect(output).toContain('ENOTDIR');
        expect(await snapshot()).toEqual(before);
      } finally {
        await env.db('resources').where({ storage_key: 'blocked/x/inner.txt' }).update({ storage_key: present });
        await fs.rm(folder, { recursive: true });
      }
    });

    test('--allow-many-missing repairs knowingly: the missing content is detached and the orphan removed', async () => {
      const { code, output } = await fsck(['--repair', '--allow-many-missing']);

      expect(code).toBe(0);
      expect(output).toContain(`detached the missing content of ${removed.length} resources`);
      expect(await stored.exists(orphan)).toBe(false);
      expect(await env.db('resources').whereIn('storage_key', removed).select('id')).toEqual([]);
    });
  });

  describe('start-up on a store that is not the database\'s', () => {
    test.each([['gateway'], ['worker']])('the %s refuses with one line when the database has content and its store has no marker', async (service) => {
      const wrong = await emptyStore();

      const { code, output } = await run(`services/${service}/main.js`, [], { ...wrong.setting, LOG_LEVEL: 'silent' });

      expect(code).toBe(1);
      const lines = output.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toBe(`filesync ${service}: ${wrong.stored.store.location} is not the content store of this database: the database has content but the store has no marker (expected ${(await env.db('content_store').first()).store_id}); point UPLOAD_DIR at the right store, or see "Store marker" in docs/OPERATIONS.md`);
      expect(await wrong.stored.everything()).toEqual([]);
    });

    test('a database created afresh over another database\'s store starts and takes its id; one with a store of its own is refused there', async () => {
      const fresh = await createTestEnv(onDriver(driver));
      const owned = await createTestEnv(onDriver(driver));
      try {
        const gateway = await spawnGateway(fresh, ownStore());
        await stopProcess(gateway);
        expect((await fresh.db('content_store').first()).store_id).toBe((await env.db('content_store').first()).store_id);

        await owned.db('content_store').insert({ singleton: 1, store_id: newId(), created_at: new Date() });
        const { code, output } = await run('services/gateway/main.js', [], { ...owned.env, ...ownStore(), LOG_LEVEL: 'silent' });
        expect(code).toBe(1);
        expect(output).toContain('is the content store of another database');
      } finally {
        await fresh.dropAll();
        await owned.dropAll();
      }
    });

    test('a database created afresh over a store that holds only a marker starts and takes that store', async () => {
      const fresh = await createTestEnv(onDriver(driver));
      const uploads = await emptyStore();
      const previous = newId();
      await uploads.stored.store.claimMarker(previous);
      try {
        const gateway = await spawnGateway(fresh, uploads.setting);
        await stopProcess(gateway);
        expect((await fresh.db('content_store').first()).store_id).toBe(previous);
      } finally {
        await fresh.dropAll();
      }
    });

    test('a newcomer\'s first start on an empty folder that does not exist yet needs no step', async () => {
      const fresh = await createTestEnv(onDriver(driver));
      const uploads = await emptyStore({ missing: true });
      try {
        const gateway = await spawnGateway(fresh, uploads.setting);
        try {
          const { api: admin } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
          expect((await admin.get('/v1/files')).status).toBe(200);
          expect(await uploads.stored.store.readMarker()).toBe((await fresh.db('content_store').first()).store_id);
        } finally {
          await stopProcess(gateway);
        }
      } finally {
        await fresh.dropAll();
      }
    });
  });
});
