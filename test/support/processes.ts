import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { TestEnv } from './harness';

export interface GatewayProcess extends ServiceProcess {
  baseUrl: string;
}

/** Resolves once `output()` contains `text`; rejects when the process ends first or after `timeoutMs`. */
export function waitForOutput(
  proc: { child: ChildProcess; output: () => string },
  text: string | RegExp,
  timeoutMs = 20000,
): Promise<void> {
  const found = () => (typeof text === 'string' ? proc.output().includes(text) : text.test(proc.output()));
  return new Promise((resolve, reject) => {
    if (found()) return resolve();
    const done = (err?: Error) => {
      clearTimeout(timer);
      proc.child.stdout!.off('data', check);
      proc.child.stderr!.off('data', check);
      proc.child.off('exit', onExit);
      if (err) reject(err);
      else resolve();
    };
    const check = () => {
      // The listener runs before others append the chunk to output(), so look on the next turn.
      setImmediate(() => found() && done());
    };
    const onExit = () => setImmediate(() => (found() ? done() : done(new Error(`process exited before printing ${String(text)}: ${proc.output()}`))));
    const timer = setTimeout(() => done(new Error(`no ${String(text)} within ${timeoutMs} ms: ${proc.output()}`)), timeoutMs);
    proc.child.stdout!.on('data', check);
    proc.child.stderr!.on('data', check);
    proc.child.on('exit', onExit);
  });
}

export interface ServiceProcess {
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output: () => string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<number | string | null>;
}

/** A real service process built by `npm run build` (`npm test` builds first); resolves once it prints `ready`. */
export async function spawnService(
  service: 'gateway' | 'worker',
  ready: string,
  env: TestEnv,
  extra: Record<string, string>,
): Promise<ServiceProcess> {
  const main = path.join(__dirname, '..', '..', 'dist', 'services', service, 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run "npm run build" (npm test does)`);
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, ...env.env, LOG_LEVEL: 'info', PORT: '0', WORKER_PORT: '0', ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string | null>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));
  const proc = { child, output: () => out, exited };
  await waitForOutput(proc, ready);
  return proc;
}

/** A real gateway process on a port the OS picks; resolves once it listens. */
export async function spawnGateway(env: TestEnv, extra: Record<string, string> = {}): Promise<GatewayProcess> {
  const proc = await spawnService('gateway', 'gateway listening', env, extra);
  const line = proc.output().split('\n').find((l) => l.includes('gateway listening'))!;
  const { port } = JSON.parse(line) as { port: number };
  return { ...proc, baseUrl: `http://127.0.0.1:${port}` };
}

/** Sends `signal` unless the process has already ended, and waits for the end. */
export async function stopProcess(proc: { child: ChildProcess; exited: Promise<unknown> }, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill(signal);
  await proc.exited;
}

/** The lines a pino logger wrote, parsed; anything else in the output fails the parse loudly. */
export function logLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON log line: ${l}`);
      }
    });
}
