import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { CLI, serverTree, sha256, tempDir } from './cli.support';

/*
 * What a watching device does with a pull that only brings new things down (clients/src/cli/engine.ts,
 * `runPass`): the folders it makes are watched like any other, and a pull that leaves work for the
 * push (something kept here that the server deleted) is followed by that push at once, not by the
 * periodic scan a minute later.
 */

let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack.close();
});

async function watchingAccount() {
  const username = `wp${randomBytes(4).toString('hex')}`;
  const password = 'watch-pull-password-1';
  await stack.admin.post('/v1/users', { username, password });
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password, deviceId: (await api.registerDevice({ name: 'api' })).id });
  const dir = await tempDir('cli-watch-pull');
  const env = { FILESYNC_SERVER: stack.gateway.baseUrl, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: password, FILESYNC_DEVICE_NAME: 'watcher' };
  const child = spawn(process.execPath, [CLI, 'sync', dir], { env: { ...process.env, ...env }, stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const stop = async () => {
    child.kill('SIGTERM');
    return exited;
  };
  return { api, dir, stop };
}

/** Polls `check` every 50 ms for at most `ms`: well under the watching client's periodic scan (60 s). */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

const newId = () => randomBytes(16).toString('hex');

test('a folder brought down while watching is watched: a file written in it reaches the server without a scan', async () => {
  const { api, dir, stop } = await watchingAccount();
  try {
    await new Promise((r) => setTimeout(r, 1500));
    const folderId = newId();
    await api.syncOps([{ opId: '1', type: 'create', resourceId: folderId, payload: { resourceType: 'folder', name: 'brought', parentId: null } }]);
    await api.uploadFile({ content: new Blob(['inside']), name: 'inside.txt', folderId });
    expect(await within(15_000, async () => (await fs.readFile(path.join(dir, 'brought', 'inside.txt'), 'utf8').catch(() => '')) === 'inside')).toBe(true);
    // The pass that placed them has ended, and its events with it.
    await new Promise((r) => setTimeout(r, 1000));
    await fs.writeFile(path.join(dir, 'brought', 'written.txt'), 'written here');
    expect(await within(15_000, async () => (await serverTree(api)).get('brought/written.txt') === sha256('written here'))).toBe(true);
  } finally {
    expect(await stop()).toBe(0);
  }
});

test('a folder the server deletes while it holds a file the service refuses is sent again at once', async () => {
  const { api, dir, stop } = await watchingAccount();
  try {
    await new Promise((r) => setTimeout(r, 1500));
    await fs.mkdir(path.join(dir, 'kept'));
    expect(await within(15_000, async () => (await serverTree(api)).has('kept'))).toBe(true);
    // A control character: valid on this disk, refused by the service, so skipped by every push.
    await fs.writeFile(path.join(dir, 'kept', 'bad\u0001name.txt'), 'stays here');
    await fs.writeFile(path.join(dir, 'marker.txt'), 'marker');
    expect(await within(15_000, async () => (await serverTree(api)).has('marker.txt'))).toBe(true);
    // A pass that brings a file down and finds nothing to send, then the deletion from another device.
    await api.uploadFile({ content: Buffer.from('from elsewhere'), name: 'elsewhere.txt' });
    expect(await within(15_000, async () => (await fs.readFile(path.join(dir, 'elsewhere.txt'), 'utf8').catch(() => '')) === 'from elsewhere')).toBe(true);
    await new Promise((r) => setTimeout(r, 1000));
    const page = await api.changes({ limit: 1000 });
    const folder = page.items.find((c) => c.name === 'kept' && !c.deleted)!;
    const res = await api.syncOps([{ opId: '2', type: 'delete', resourceId: folder.id }]);
    expect(res.failed).toBeNull();
    // The folder stays on disk with what it holds, and the push makes it again on the server.
    expect(await within(15_000, async () => (await serverTree(api)).has('kept'))).toBe(true);
    expect(await fs.readFile(path.join(dir, 'kept', 'bad\u0001name.txt'), 'utf8')).toBe('stays here');
  } finally {
    expect(await stop()).toBe(0);
  }
});
