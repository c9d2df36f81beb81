import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { readTree, runCli, tempDir } from './cli.support';

/**
 * docs/CLIENT.md guarantee 9 ("First run and signing in"): a first run that cannot sign in binds DIR to
 * nothing; a DIR synced with one account and server refuses another. The "wrong server" is a second
 * HTTP service that registers devices but knows no account, as another filesync service would.
 */
let stack: TestStack;
let other: http.Server;
let otherUrl: string;

beforeAll(async () => {
  stack = await startStack();
  other = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'POST' && req.url === '/v1/devices') return json(201, { id: randomBytes(16).toString('hex'), name: 'x', platform: 'linux', createdAt: new Date().toISOString() });
      if (req.method === 'POST' && req.url === '/v1/auth/login') return json(401, { error: { code: 'UNAUTHORIZED', message: 'invalid credentials' } });
      return json(404, { error: { code: 'NOT_FOUND', message: 'not found' } });
    });
  });
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
});

afterAll(async () => {
  other.closeAllConnections();
  await new Promise((resolve) => other.close(resolve));
  await stack.close();
});

async function account() {
  const username = `signin${randomBytes(4).toString('hex')}`;
  await stack.admin.post('/v1/users', { username, password: 'signin-password-1' });
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password: 'signin-password-1', deviceId: (await api.registerDevice({ name: 'api' })).id });
  const env = { FILESYNC_SERVER: stack.gateway.baseUrl, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: 'signin-password-1' };
  return { username, api, env };
}

/** The device DIR is bound to, as `filesync status` shows it. */
const deviceOf = async (dir: string, env: Record<string, string>) => (await runCli(['status', dir], env)).stdout.match(/\(device ([^)]*)\)/)?.[1];

test('a wrong password or an unknown user binds nothing: the next run may use another username', async () => {
  const a = await account();
  await a.api.uploadFile({ content: Buffer.from('hello'), name: 'hello.txt' });
  const dir = await tempDir('signin-user');
  await fs.writeFile(path.join(dir, 'mine.txt'), 'mine');
  expect((await runCli(['sync', dir, '--once'], { ...a.env, FILESYNC_PASSWORD: 'wrong-password' })).code).toBe(3);
  expect((await runCli(['sync', dir, '--once', '--username', 'nobody-here'], a.env)).code).toBe(3);
  // Nothing in DIR changed but the state folder.
  expect([...(await readTree(dir)).keys()]).toEqual(['mine.txt']);

  const ok = await runCli(['sync', dir, '--once', '--device-name', 'chosen-later'], a.env);
  expect(ok.code).toBe(0);
  expect(ok.stdout).toContain('downloaded hello.txt');
  expect(await deviceOf(dir, a.env)).toBe('chosen-later');
  // Now bound: another account is refused.
  const b = await account();
  expect((await runCli(['sync', dir, '--once'], b.env)).code).toBe(2);
});

test('a run against an unreachable or a wrong server binds nothing: the next may use another server and device name', async () => {
  const a = await account();
  const dir = await tempDir('signin-server');
  expect((await runCli(['sync', dir, '--once', '--device-name', 'first-try'], { ...a.env, FILESYNC_SERVER: 'http://127.0.0.1:9' })).code).toBe(4);
  expect((await runCli(['sync', dir, '--once', '--device-name', 'second-try'], { ...a.env, FILESYNC_SERVER: otherUrl })).code).toBe(3);
  expect([...(await readTree(dir)).keys()]).toEqual([]);

  const ok = await runCli(['sync', dir, '--once', '--device-name', 'third-try'], a.env);
  expect(ok.code).toBe(0);
  expect(await deviceOf(dir, a.env)).toBe('third-try');
  // Later runs need no option: the server recorded is DIR's.
  const { FILESYNC_SERVER: _server, ...noServer } = a.env;
  expect((await runCli(['sync', dir, '--once'], noServer)).code).toBe(0);
  expect((await runCli(['status', dir], noServer)).stdout).toContain(`on ${stack.gateway.baseUrl} (device third-try)`);
  // Bound: another server is refused, whichever account.
  expect((await runCli(['sync', dir, '--once'], { ...a.env, FILESYNC_SERVER: otherUrl })).code).toBe(2);
});
