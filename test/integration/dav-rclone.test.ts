import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack, type TestStack } from '../support/stack';
import { createAppPassword, run } from '../support/dav';

const BIG_BYTES = 60 * 1024 * 1024;
const FOLDERS = 4;

/**
 * A round trip through rclone's WebDAV backend (vendor `other`, Debian package `rclone`): a tree of
 * 400 files with Unicode names (folders of 100) and one file over 50 MiB goes up, is checked byte
 * for byte in both directions, and a deletion made with rclone lands in the trash of the API.
 */
describe('rclone over WebDAV', () => {
  let stack: TestStack;
  let workdir: string;
  let rcloneEnv: Record<string, string>;

  const rclone = async (...args: string[]) => {
    const result = await run('rclone', args, rcloneEnv);
    if (result.code !== 0) throw new Error(`rclone ${args.join(' ')} failed (${result.code}):\n${result.output}`);
    return result.output;
  };

  beforeAll(async () => {
    stack = await startStack();
    workdir = mkdtempSync(path.join(os.tmpdir(), 'rclone-'));
    const password = await createAppPassword(stack.admin, 'rclone');
    const config = path.join(workdir, 'rclone.conf');
    writeFileSync(config, '');
    // `--`: an app password may begin with '-', which rclone would read as a flag. The output carries
    // stderr too: the obscured password is its last line that is one base64url word.
    const printed = (await run('rclone', ['obscure', '--', password.password], { RCLONE_CONFIG: config })).output;
    const obscured = printed.split('\n').map((line) => line.trim()).filter((line) => /^[A-Za-z0-9_-]+$/.test(line)).pop();
    if (!obscured) throw new Error(`rclone obscure printed no password: ${printed}`);
    rcloneEnv = {
      RCLONE_CONFIG: config,
      RCLONE_CONFIG_FS_TYPE: 'webdav',
      RCLONE_CONFIG_FS_URL: `${stack.gateway.baseUrl}/dav/`,
      RCLONE_CONFIG_FS_VENDOR: 'other',
      RCLONE_CONFIG_FS_USER: 'admin',
      RCLONE_CONFIG_FS_PASS: obscured,
    };
  });
  afterAll(async () => {
    await stack.close();
    rmSync(workdir, { recursive: true, force: true });
  });

  test('a tree of 400 Unicode names and a 60 MiB file goes up and down byte for byte, and a deletion goes to the trash', async () => {
    const up = path.join(workdir, 'up');
    for (let d = 0; d < FOLDERS; d++) {
      const dir = path.join(up, `dossier ${d} — ünïcødé`, `子フォルダ ${d}`);
      mkdirSync(dir, { recursive: true });
      for (let f = 0; f < 100; f++) writeFileSync(path.join(dir, `ファイル ${f} ✓ café.txt`), randomBytes(64 + f));
    }
    writeFileSync(path.join(up, 'big €.bin'), randomBytes(BIG_BYTES));

    await rclone('copy', up, 'fs:tree', '--transfers', '8');
    expect(await rclone('check', '--download', up, 'fs:tree')).toMatch(/0 differences found/);
    const down = path.join(workdir, 'down');
    await rclone('copy', 'fs:tree', down, '--transfers', '8');
    // `up` holds what the service holds (checked above), so the copy down is checked against it on disk.
    expect(await rclone('check', up, down)).toMatch(/0 differences found/);
    expect(readFileSync(path.join(down, 'big €.bin')).equals(readFileSync(path.join(up, 'big €.bin')))).toBe(true);
    const listed = (await rclone('lsf', '-R', '--files-only', 'fs:tree')).trim().split('\n');
    expect(listed).toHaveLength(FOLDERS * 100 + 1);

    await rclone('deletefile', 'fs:tree/dossier 3 — ünïcødé/子フォルダ 3/ファイル 7 ✓ café.txt');
    const trash = await stack.admin.get('/v1/trash?limit=10');
    expect(trash.status).toBe(200);
    expect(trash.body.items.map((i: { name: string }) => i.name)).toEqual(['ファイル 7 ✓ café.txt']);
    expect(await rclone('lsf', 'fs:tree/dossier 3 — ünïcødé/子フォルダ 3/')).not.toContain('ファイル 7 ✓ café.txt');
  }, 600_000);
});
