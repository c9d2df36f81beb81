import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { readTree, runCli, serverTree, sorted, tempDir } from './cli.support';

/** docs/CLIENT.md, "What it keeps, and starting over": deleting the state folder makes the next run start over safely. */
let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack.close();
});

test('after the state folder is deleted, the next run re-links what matches, keeps both where not, and deletes nothing', async () => {
  const username = `state${randomBytes(4).toString('hex')}`;
  const password = 'state-password-1';
  await stack.admin.post('/v1/users', { username, password });
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password, deviceId: (await api.registerDevice({ name: 'api' })).id });
  const env = { FILESYNC_SERVER: stack.gateway.baseUrl, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: password, FILESYNC_DEVICE_NAME: 'laptop' };

  const dir = await tempDir('state');
  await fs.mkdir(path.join(dir, 'docs'));
  await fs.writeFile(path.join(dir, 'docs', 'same.txt'), 'same');
  await fs.writeFile(path.join(dir, 'changed.txt'), 'before');
  await fs.writeFile(path.join(dir, 'gone-here.txt'), 'kept on the server');
  expect((await runCli(['sync', dir, '--once'], env)).code).toBe(0);
  const ids = new Map((await api.listFiles({ limit: 100 })).items.map((f) => [f.name, f.id]));

  await fs.rm(path.join(dir, '.filesync'), { recursive: true });
  await fs.writeFile(path.join(dir, 'changed.txt'), 'after');
  await fs.rm(path.join(dir, 'gone-here.txt'));
  await fs.writeFile(path.join(dir, 'new-here.txt'), 'new');
  await api.uploadFile({ content: Buffer.from('new there'), name: 'new-there.txt' });

  const res = await runCli(['sync', dir, '--once'], env);
  expect(res.code).toBe(0);
  expect(res.stdout).not.toContain('uploaded docs/same.txt');
  expect(res.stdout).not.toContain('deleted');
  const tree = await readTree(dir);
  expect(sorted(await serverTree(api))).toEqual(sorted(tree));
  // Linked: the same resource, not a second copy.
  expect((await api.listFiles({ limit: 100 })).items.find((f) => f.name === 'same.txt')?.id).toBe(ids.get('same.txt'));
  // Nothing lost: the server's version keeps the name, the local one is kept beside it.
  expect(await fs.readFile(path.join(dir, 'changed.txt'), 'utf8')).toBe('before');
  const copy = [...tree.keys()].find((p) => /^changed \(conflicted copy laptop \d{4}-\d\d-\d\d \d{6}\)\.txt$/.test(p));
  expect(copy).toBeDefined();
  expect(await fs.readFile(path.join(dir, copy!), 'utf8')).toBe('after');
  expect(existsSync(path.join(dir, 'gone-here.txt'))).toBe(true);
  expect(tree.has('new-here.txt') && tree.has('new-there.txt')).toBe(true);
  expect((await runCli(['sync', dir, '--once'], env)).stdout).toBe('');
});
