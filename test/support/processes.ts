import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import { CONFIG_VARIABLES } from '../../shared/config';
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

export type ServiceKind = 'gateway' | 'worker';

export interface LaunchOptions {
  /** The service's settings. Settings of the shell this runs in are not passed on: only these count. */
  env: Record<string, string>;
  /** A name for messages and the log file; the kind by default. */
  name?: string;
  /** Node options ahead of the script (--cpu-prof ...). */
  nodeArgs?: string[];
  /** A file the output is appended to, across restarts. */
  logFile?: string;
  /** Characters of output kept in memory, the most recent; all of it when unset. */
  keepOutput?: number;
}

/** Ready once the output shows this text, or once this probe holds. */
export type Readiness = string | RegExp | (() => Promise<boolean>);

/** The root of the repository, from the sources (jest) or from their build in dist/ (bench, chaos). */
const ROOT = path.basename(path.resolve(__dirname, '..', '..')) === 'dist' ? path.resolve(__dirname, '..', '..', '..') : path.resolve(__dirname, '..', '..');

export const serviceMain = (kind: ServiceKind) => path.join(ROOT, 'dist', 'services', kind, 'main.js');

/** The environment without the service's settings: those come from the launcher's caller alone. */
function inheritedEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !CONFIG_VARIABLES.includes(key)));
}

/**
 * A built gateway or worker as a process of its own (`npm run build` first; npm test, bench and chaos
 * do): started, signalled, stopped and started again. Tests, the bench and the chaos run all launch
 * the services here.
 */
export class ServiceProcess {
  child!: ChildProcess;
  /** Resolves with the exit code (or signal) once the current process has ended. */
  exited: Promise<number | string | null> = Promise.resolve(null);
  readonly name: string;
  private out = '';
  private readonly log: WriteStream | undefined;

  constructor(
    readonly kind: ServiceKind,
    private readonly options: LaunchOptions,
  ) {
    this.name = options.name ?? kind;
    this.log = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : undefined;
  }

  /** Everything the current process wrote to stdout and stderr so far (or the most recent part). */
  output(): string {
    return this.out;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.running ? this.child.pid : undefined;
  }

  /**
   * Starts the process; resolves once it is ready. Rejects when it ends first or is not ready within
   * `timeoutMs`, and then kills it: nothing is left running behind a failed start.
   */
  async start(ready: Readiness, timeoutMs = 30_000): Promise<this> {
    if (this.running) throw new Error(`${this.name} is already running`);
    const main = serviceMain(this.kind);
    if (!existsSync(main)) throw new Error(`${main} is missing: run "npm run build" first (npm test, npm run bench and npm run chaos do)`);
    this.out = '';
    const child = spawn(process.execPath, [...(this.options.nodeArgs ?? []), main], {
      env: { ...inheritedEnv(), ...this.options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
    const keep = (d: Buffer) => {
      this.log?.write(d);
      this.out += d.toString();
      const limit = this.options.keepOutput;
      if (limit !== undefined && this.out.length > limit) this.out = this.out.slice(-limit);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    try {
      if (typeof ready === 'function') await this.until(ready, timeoutMs);
      else await waitForOutput(this, ready, timeoutMs);
    } catch (err) {
      await this.stop('SIGKILL');
      throw err;
    }
    return this;
  }

  private async until(ready: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    for (const deadline = Date.now() + timeoutMs; !(await ready()); ) {
      if (!this.running) throw new Error(`${this.name} exited during start-up: ${this.out.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`${this.name} not ready within ${timeoutMs} ms: ${this.out.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Sends `signal` while the process runs (SIGSTOP and SIGCONT included). */
  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /**
   * Sends `signal` unless the process has already ended and waits for the end; past `killAfterMs`
   * sends SIGKILL. True when it had to.
   */
  async stop(signal: NodeJS.Signals = 'SIGTERM', killAfterMs?: number): Promise<boolean> {
    if (!this.running) return false;
    this.child.kill(signal);
    if (killAfterMs === undefined) {
      await this.exited;
      return false;
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), killAfterMs)));
    const killed = await Promise.race([this.exited.then(() => false), late]);
    clearTimeout(timer);
    if (killed) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
    return killed;
  }

  /** Ends the log file; the process must have been stopped. */
  close(): void {
    this.log?.end();
  }
}

/** The settings a test's service process runs with: the environment's, logging at info on ports the OS picks. */
const testSettings = (env: TestEnv, extra: Record<string, string>) => ({ ...env.env, LOG_LEVEL: 'info', PORT: '0', WORKER_PORT: '0', ...extra });

/** A real service process of a test; resolves once it prints `ready`. */
export function spawnService(service: ServiceKind, ready: string, env: TestEnv, extra: Record<string, string>): Promise<ServiceProcess> {
  return new ServiceProcess(service, { env: testSettings(env, extra) }).start(ready, 20_000);
}

/** A real gateway process on a port the OS picks; resolves once it listens. */
export async function spawnGateway(env: TestEnv, extra: Record<string, string> = {}): Promise<GatewayProcess> {
  const proc = await spawnService('gateway', 'gateway listening', env, extra);
  const line = proc.output().split('\n').find((l) => l.includes('gateway listening'))!;
  const { port } = JSON.parse(line) as { port: number };
  return Object.assign(proc, { baseUrl: `http://127.0.0.1:${port}` });
}

/** Sends `signal` unless the process has already ended, and waits for the end. */
export async function stopProcess(proc: { child: ChildProcess; exited: Promise<unknown> }, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill(signal);
  await proc.exited;
}

/** The one line the gateway prints for people at start-up, beside its JSON logs. */
export const STARTUP_LINE = /^filesync listening on http:\/\/\S+( \(administrator: \S+\))?$/;

/** The lines a pino logger wrote, parsed; anything else (but the start-up line) fails the parse loudly. */
export function logLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((l) => l.trim() !== '' && !STARTUP_LINE.test(l))
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON log line: ${l}`);
      }
    });
}
