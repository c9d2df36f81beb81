import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { ADMIN, createTestEnv, type TestEnv } from '../support/harness';
import { serviceMain, ServiceProcess, spawnGateway, spawnService, STARTUP_LINE, waitForOutput } from '../support/processes';

/*
 * What a person starting the service sees: one line saying where the gateway listens and who the
 * administrator is, the listening address as HOST says, and a configuration mistake as one sentence
 * naming the variable, from the process that reads it.
 */
const launcher = path.join(__dirname, '..', '..', 'dist', 'launcher', 'services', 'launcher', 'main.js');

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/** Runs a script to its end with exactly `env` as its settings; its exit code and what it printed. */
function run(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const portOf = (proc: ServiceProcess) => Number(/"port":(\d+)/.exec(proc.output().split('\n').find((l) => l.includes('gateway listening'))!)![1]);

describe('the front door', () => {
  let env: TestEnv;

  beforeAll(async () => {
    env = await createTestEnv();
  });

  afterAll(async () => {
    await env?.dropAll();
  });

  test('the gateway prints where it listens and the administrator\'s name (never the password), and listens on the loopback address only', async () => {
    const gateway = await spawnGateway(env);
    try {
      await waitForOutput(gateway, 'filesync listening on ');
      const port = portOf(gateway);
      const lines = gateway.output().split('\n').filter((l) => STARTUP_LINE.test(l));
      expect(lines).toEqual([`filesync listening on http://127.0.0.1:${port} (administrator: ${ADMIN.username})`]);
      expect(gateway.output()).not.toContain(ADMIN.password);
      expect(await accepts('127.0.0.1', port)).toBe(true);
      // Another loopback address reaches a socket bound to every interface, not one bound to 127.0.0.1.
      expect(await accepts('127.0.0.2', port)).toBe(false);
    } finally {
      await gateway.stop();
    }
  }, 60_000);

  test('HOST=0.0.0.0 listens on every interface, and the line says so', async () => {
    const gateway = await spawnGateway(env, { HOST: '0.0.0.0' });
    try {
      await waitForOutput(gateway, 'filesync listening on ');
      const port = portOf(gateway);
      expect(gateway.output()).toContain(`filesync listening on http://0.0.0.0:${port} (administrator: ${ADMIN.username})`);
      expect(await accepts('127.0.0.2', port)).toBe(true);
    } finally {
      await gateway.stop();
    }
  }, 60_000);

  test('the worker\'s monitoring endpoints listen on HOST too', async () => {
    const worker = await spawnService('worker', 'worker monitoring endpoints listening', env, {});
    try {
      const port = Number(/"port":(\d+)[^\n]*worker monitoring endpoints listening/.exec(worker.output())![1]);
      expect(await accepts('127.0.0.1', port)).toBe(true);
      expect(await accepts('127.0.0.2', port)).toBe(false);
    } finally {
      await worker.stop();
    }
  }, 60_000);

  test('a configuration mistake is one sentence naming the variable, from the gateway that reads it, exit 1, no stack trace', async () => {
    const { ADMIN_PASSWORD: _password, ...settings } = env.env;
    const res = await run(serviceMain('gateway'), settings);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toBe('filesync gateway: ADMIN_PASSWORD must be set when ADMIN_USERNAME is\n');
  }, 30_000);

  test('the worker does not speak of the gateway\'s variables: it starts with ADMIN_USERNAME alone', async () => {
    const worker = await spawnService('worker', 'worker ready', env, { ADMIN_PASSWORD: '' });
    try {
      expect(worker.output()).not.toMatch(/ADMIN_/);
    } finally {
      await worker.stop();
    }
  }, 60_000);

  test('npm start\'s launcher checks the configuration of both services first: one line, exit 1, nothing started', async () => {
    const gatewayMistake = await run(launcher, { ...env.env, PORT: 'eighty' });
    expect(gatewayMistake.code).toBe(1);
    expect(gatewayMistake.stdout).toBe('');
    expect(gatewayMistake.stderr).toBe('filesync gateway: PORT must be a number\n');

    const workerMistake = await run(launcher, { ...env.env, SYNC_CONCURRENCY: 'many' });
    expect(workerMistake.code).toBe(1);
    expect(workerMistake.stderr).toBe('filesync worker: SYNC_CONCURRENCY must be a number\n');
  }, 30_000);
});
