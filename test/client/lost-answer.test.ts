import { promises as fs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { startStack, type TestStack } from '../support/stack';
import { cliAccount, readTree, runCli, serverTree, sorted, syncOnceOk, tempDir } from './cli.support';

/**
 * docs/CLIENT.md guarantees 1 and 4 when a pass dies between the service applying its ops and the
 * client hearing the answer: the next run must converge on what the service holds, whatever of the
 * pass's renames and moves were applied.
 */
let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack.close();
});

/**
 * A proxy in front of the gateway that passes everything on, except that the `nth` POST /v1/sync/ops
 * after `arm` is answered by the gateway in full, and then its client is SIGKILLed before the answer
 * reaches it.
 */
async function killingProxy(target: string, nth: number): Promise<{ url: string; arm(child: ChildProcess): void; close(): Promise<void> }> {
  const to = new URL(target);
  let child: ChildProcess | undefined;
  let seen = 0;
  const server = http.createServer((req, res) => {
    const fatal = child !== undefined && req.method === 'POST' && req.url?.startsWith('/v1/sync/ops') && ++seen === nth;
    const upstream = http.request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      if (!fatal) {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        return;
      }
      answer.resume();
      answer.on('end', () => {
        child?.kill('SIGKILL');
        child = undefined;
        res.destroy();
      });
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arm: (c) => (child = c),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('a pass killed after the service applied its renames, before their answer arrived', () => {
  for (const nth of [1, 2, 3]) {
    test(`two files swapped across folders under other names, killed at the answer of ops batch ${nth}: the next run converges`, async () => {
      const a = await cliAccount(stack, 'lost');
      const [one, two] = [await tempDir('lost-1'), await tempDir('lost-2')];
      // Device one always goes through the proxy: a folder stays bound to the address it first synced with.
      const proxy = await killingProxy(stack.gateway.baseUrl, nth);
      const env = { ...a.env('one'), FILESYNC_SERVER: proxy.url };
      await fs.mkdir(path.join(one, 'Docs'));
      await fs.writeFile(path.join(one, 'top.txt'), 'top content');
      await fs.writeFile(path.join(one, 'Docs', 'inner.txt'), 'inner content');
      await fs.writeFile(path.join(one, 'inner.txt'), 'a bystander holding the name');
      await syncOnceOk(one, env);
      await syncOnceOk(two, a.env('two'));
      // Swapped through a temporary name: Docs/inner.txt <-> top.txt.
      await fs.rename(path.join(one, 'Docs', 'inner.txt'), path.join(one, 'swap.tmp'));
      await fs.rename(path.join(one, 'top.txt'), path.join(one, 'Docs', 'inner.txt'));
      await fs.rename(path.join(one, 'swap.tmp'), path.join(one, 'top.txt'));
      try {
        const killed = await runCli(['sync', one, '--once'], env, { started: (c) => proxy.arm(c) });
        expect(killed.signal).toBe('SIGKILL');
        await syncOnceOk(one, env);
        await syncOnceOk(one, env);
        const server = sorted(await serverTree(a.api));
        expect(sorted(await readTree(one))).toEqual(server);
        expect(await fs.readFile(path.join(one, 'top.txt'), 'utf8')).toBe('inner content');
        expect(await fs.readFile(path.join(one, 'Docs', 'inner.txt'), 'utf8')).toBe('top content');
        await syncOnceOk(two, a.env('two'));
        expect(sorted(await readTree(two))).toEqual(server);
        expect((await syncOnceOk(one, env)).stdout).toBe('');
      } finally {
        await proxy.close();
      }
    });
  }

  test('a rename the service applied, then renamed again on disk before the next run: the last name wins everywhere', async () => {
    const a = await cliAccount(stack, 'lost');
    const [one, two] = [await tempDir('lost-1'), await tempDir('lost-2')];
    const proxy = await killingProxy(stack.gateway.baseUrl, 1);
    const env = { ...a.env('one'), FILESYNC_SERVER: proxy.url };
    try {
      await fs.writeFile(path.join(one, 'first.txt'), 'renamed twice');
      await syncOnceOk(one, env);
      await syncOnceOk(two, a.env('two'));
      await fs.rename(path.join(one, 'first.txt'), path.join(one, 'second.txt'));
      const killed = await runCli(['sync', one, '--once'], env, { started: (c) => proxy.arm(c) });
      expect(killed.signal).toBe('SIGKILL');
      expect([...(await serverTree(a.api)).keys()]).toEqual(['second.txt']);
      await fs.rename(path.join(one, 'second.txt'), path.join(one, 'third.txt'));
      await syncOnceOk(one, env);
      const server = sorted(await serverTree(a.api));
      expect(server.map(([p]) => p)).toEqual(['third.txt']);
      expect(sorted(await readTree(one))).toEqual(server);
      await syncOnceOk(two, a.env('two'));
      expect(sorted(await readTree(two))).toEqual(server);
    } finally {
      await proxy.close();
    }
  });
});
