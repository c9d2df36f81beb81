import { spawn } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../shared/config';
import { createDb } from '../../shared/db/knex';
import { createContentStore } from '../../shared/storage/store.factory';
import { DRIVERS } from '../support/drivers';
import { listFilesUnder } from '../support/fixtures';
import { ADMIN, deleteQueueKeys, JWT_SECRET } from '../support/harness';
import { logLines, stopProcess, waitForOutput } from '../support/processes';
import { emptyPrefix, s3Environment } from '../support/rgw';

/*
 * As a newcomer runs it: `npm start`'s launcher starts a gateway and a worker together on a database
 * that does not exist yet. Both migrate at start-up; one must do it while the other waits, and
 * nothing alarming (knex's "Can't take lock to run migrations ... knex migrate:unlock") is printed.
 */
const launcher = path.join(__dirname, '..', '..', 'dist', 'launcher', 'services', 'launcher', 'main.js');

describe.each(DRIVERS)('a fresh start on the %s driver', (driver) => {
  const name = `fs_test_${randomBytes(5).toString('hex')}`;
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    if (!existsSync(launcher)) throw new Error(`${launcher} is missing: run "npm run build" (npm test does)`);
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), `${name}-`));
    env = {
      DATABASE_URL: `mysql://root@127.0.0.1:3306/${name}`,
      REDIS_URL: 'redis://127.0.0.1:6379',
      DATA_DIR: dataDir,
      JWT_SECRET,
      ADMIN_USERNAME: ADMIN.username,
      ADMIN_PASSWORD: ADMIN.password,
      QUEUE_PREFIX: name,
      LOG_LEVEL: 'info',
      PORT: '0',
      WORKER_PORT: '0',
      // On S3: the suite's RGW, under a prefix of this start's own.
      ...(driver === 's3' ? s3Environment(`${name}/`) : {}),
    };
  });

  afterAll(async () => {
    const db = createDb('mysql://root@127.0.0.1:3306/mysql');
    await db.raw(`DROP DATABASE IF EXISTS \`${name}\``).catch(() => undefined);
    await db.destroy();
    await fs.rm(dataDir, { recursive: true, force: true });
    const { s3 } = loadConfig(env);
    if (s3) await emptyPrefix(s3);
    await deleteQueueKeys(name);
  });

  test('a fresh database: gateway and worker started together migrate once, print no lock warning, and claim the store', async () => {
    const child = spawn(process.execPath, [launcher], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const proc = { child, output: () => out, exited };
    try {
      await waitForOutput(proc, 'gateway listening', 60_000);
      await waitForOutput(proc, 'worker ready', 60_000);
    } finally {
      await stopProcess(proc);
    }

    expect(out).not.toMatch(/Can't take lock|migrate:unlock|already locked/i);
    // Every line is a JSON log line, and none is a warning or worse.
    expect(logLines(out).filter((l) => Number(l.level) >= 40)).toEqual([]);
    const config = loadConfig(env);
    const db = createDb(config.databaseUrl);
    try {
      const rows = await db('knex_migrations').select('name');
      expect(new Set(rows.map((r: { name: string }) => r.name)).size).toBe(rows.length);
      expect((await db('knex_migrations_lock').first('is_locked')).is_locked).toBe(0);
      // The store the start chose is the one the configuration names: marked as this database's.
      expect(await createContentStore(config).readMarker()).toMatch(/^[0-9a-f]{32}$/);
    } finally {
      await db.destroy();
    }
    // On S3 nothing is written under the local upload folder.
    if (driver === 's3') expect(await listFilesUnder(config.uploadDir)).toEqual([]);
  }, 120_000);
});
