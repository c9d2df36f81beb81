import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { newId } from '../../shared/ids';
import { Api } from '../support/client';
import { ADMIN, createTestEnv, type TestEnv } from '../support/harness';
import { onDisk, uploadFile } from '../support/lifecycle';
import { spawnGateway, stopProcess } from '../support/processes';
import { startStack, type TestStack } from '../support/stack';

/** The content store's marker: fsck and the services refuse a store that is not the database's. */
let stack: TestStack;
let env: TestEnv;
let api: Api;
let deviceId: string;
const scratch: string[] = [];

const DIST = path.join(__dirname, '..', '..', 'dist');
const MARKER = '.filesync-store';

/** Runs a compiled entry point to its end against the test's database, with `extra` settings. */
function run(main: string, args: string[], extra: Record<string, string> = {}): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(DIST, main), ...args], { env: { ...process.env, ...env.env, PORT: '0', WORKER_PORT: '0', ...extra }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

const fsck = (args: string[] = [], extra: Record<string, string> = {}) => run('services/maintenance/fsck.main.js', args, extra);

async function emptyDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'fs-wrong-store-'));
  scratch.push(dir);
  return dir;
}

/** Every resource's content columns, and every content file's bytes: what a refusal must leave as it was. */
async function snapshot(): Promise<{ rows: unknown[]; files: Record<string, string> }> {
  const rows = await env.db('resources').orderBy('id').select('id', 'storage_key', 'rev', 'size_bytes', 'content_sha256');
  const files: Record<string, string> = {};
  for (const row of rows as { storage_key: string | null }[]) {
    if (!row.storage_key) continue;
    files[row.storage_key] = await fs.readFile(path.join(env.uploadDir, row.storage_key), 'utf8').catch(() => '<absent>');
  }
  return { rows, files };
}

beforeAll(async () => {
  stack = await startStack();
  env = stack.env;
  ({ api, deviceId } = await stack.admin.createUser('marked'));
  for (let i = 0; i < 4; i++) await uploadFile(api, `kept-${i}.txt`, `content ${i}`);
});

afterAll(async () => {
  await stack?.close();
  await Promise.all(scratch.map((dir) => fs.rm(dir, { recursive: true, force: true })));
});

test('the first start marks the store with the id the database records', async () => {
  const row = await env.db('content_store').first();
  expect(row.store_id).toMatch(/^[0-9a-f]{32}$/);
  expect((await fs.readFile(path.join(env.uploadDir, MARKER), 'utf8')).trim()).toBe(row.store_id);
});

describe('fsck on a store that is not the database\'s', () => {
  test.each([
    ['an empty folder (a volume not mounted)', async () => emptyDir()],
    ['the store of another database', async () => {
      const dir = await emptyDir();
      await fs.writeFile(path.join(dir, MARKER), `${newId()}\n`);
      return dir;
    }],
  ])('%s: --repair exits 3, says why, and changes no row and no byte', async (_label, arrange) => {
    const wrong = await arrange();
    const before = await snapshot();
    const markerBefore = await fs.readdir(wrong);

    const repair = await fsck(['--repair'], { UPLOAD_DIR: wrong });
    const check = await fsck([], { UPLOAD_DIR: wrong });

    expect(repair.code).toBe(3);
    expect(repair.output).toContain('is not this database\'s content store');
    expect(repair.output).not.toContain('repaired:');
    expect(check.code).toBe(3);
    expect(await snapshot()).toEqual(before);
    expect(await fs.readdir(wrong)).toEqual(markerBefore);
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
    for (const key of removed) await fs.rm(path.join(env.uploadDir, key));
    orphan = `${deviceId}/${newId()}.bin`;
    await fs.writeFile(path.join(env.uploadDir, orphan), 'orphan');
    const old = new Date(Date.now() - 2 * 3600_000);
    await fs.utimes(path.join(env.uploadDir, orphan), old, old);
  });

  test('with more than a tenth of the content missing, --repair refuses (exit 3) and changes no row and no byte', async () => {
    const before = await snapshot();

    const { code, output } = await fsck(['--repair']);

    expect(code).toBe(3);
    expect(output).toContain(`${removed.length} of 4 resources have no content in the store, more than a tenth`);
    expect(output).toContain('--allow-many-missing');
    expect(await snapshot()).toEqual(before);
    expect(await onDisk(env, orphan)).toBe(true);
  });

  test('a file that cannot be read is a failure (exit 2), not missing content', async () => {
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
    expect(await onDisk(env, orphan)).toBe(false);
    expect(await env.db('resources').whereIn('storage_key', removed).select('id')).toEqual([]);
  });
});

describe('start-up on a store that is not the database\'s', () => {
  test.each([['gateway'], ['worker']])('the %s refuses with one line when the database has content and UPLOAD_DIR has no marker', async (service) => {
    const wrong = await emptyDir();

    const { code, output } = await run(`services/${service}/main.js`, [], { UPLOAD_DIR: wrong, LOG_LEVEL: 'silent' });

    expect(code).toBe(1);
    const lines = output.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(`filesync ${service}: ${path.resolve(wrong)} is not the content store of this database: the database has content but the store has no marker (expected ${(await env.db('content_store').first()).store_id}); point UPLOAD_DIR at the right store, or see "Store marker" in docs/OPERATIONS.md`);
    expect(await fs.readdir(wrong)).toEqual([]);
  });

  test('a store holding another database\'s content is refused even when this database has none', async () => {
    const other = await createTestEnv();
    try {
      const { code, output } = await run('services/gateway/main.js', [], { ...other.env, UPLOAD_DIR: env.uploadDir, LOG_LEVEL: 'silent' });
      expect(code).toBe(1);
      expect(output).toContain('is the content store of another database');
      expect(await other.db('content_store').first()).toBeUndefined();
    } finally {
      await other.dropAll();
    }
  });

  test('a database created afresh over a store that holds only a marker starts and takes that store', async () => {
    const fresh = await createTestEnv();
    const uploads = await emptyDir();
    const previous = newId();
    await fs.writeFile(path.join(uploads, MARKER), `${previous}\n`);
    try {
      const gateway = await spawnGateway(fresh, { UPLOAD_DIR: uploads });
      await stopProcess(gateway);
      expect((await fresh.db('content_store').first()).store_id).toBe(previous);
    } finally {
      await fresh.dropAll();
    }
  });

  test('a newcomer\'s first start on an empty folder that does not exist yet needs no step', async () => {
    const fresh = await createTestEnv();
    const uploads = path.join(await emptyDir(), 'uploads');
    try {
      const gateway = await spawnGateway(fresh, { UPLOAD_DIR: uploads });
      try {
        const { api: admin } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
        expect((await admin.get('/v1/files')).status).toBe(200);
        expect((await fs.readFile(path.join(uploads, MARKER), 'utf8')).trim()).toBe((await fresh.db('content_store').first()).store_id);
      } finally {
        await stopProcess(gateway);
      }
    } finally {
      await fresh.dropAll();
    }
  });
});
