import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../shared/logger';

/** What the worker and its background process say to each other over IPC. */
export const BACKGROUND_PROCESS_READY = 'background ready';
export const BACKGROUND_PROCESS_CLOSE = 'background close';

/** A process that ran this long before ending is started again at once; one that ends sooner waits longer each time. */
const STABLE_MS = 30_000;
const FIRST_RESTART_MS = 200;
const MAX_RESTART_MS = 30_000;

/**
 * The worker's side of its background process (background.child.ts): started with the worker's
 * environment and output, started again when it ends on its own (a crash, a kill; its jobs in
 * progress are retried by BullMQ once their locks lapse), and asked to stop when the worker closes.
 */
export class BackgroundProcess {
  private child: ChildProcess | undefined;
  /** Whether the running process consumes the queue yet. */
  private ready = false;
  /** Whether a process became ready once: from then on, one that ends is started again. */
  private served = false;
  private closing = false;
  private restartMs = FIRST_RESTART_MS;
  private restartTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly file: string,
    private readonly logger: Logger,
  ) {}

  /** Undefined where the child's compiled file is absent (the sources run under ts-jest). */
  static create(logger: Logger): BackgroundProcess | undefined {
    const file = path.join(__dirname, 'background.child.js');
    return existsSync(file) ? new BackgroundProcess(file, logger) : undefined;
  }

  /**
   * Starts the process; resolves once it consumes the queue, rejects when it ends first. Only a
   * process that became ready once is started again when it ends: a first start that fails is the
   * worker's failure to start.
   */
  start(): Promise<void> {
    // Node's options carry over (--cpu-prof profiles it too), except a debugger's, whose port is the worker's.
    const execArgv = process.execArgv.filter((arg) => !arg.startsWith('--inspect'));
    // In a session of its own: where the scheduler shares the CPU between sessions first (Linux's
    // autogroup), the child lowers its session as a whole (background.child.ts).
    const child = fork(this.file, [], { execArgv, detached: true, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child = child;
    this.ready = false;
    const started = Date.now();
    return new Promise<void>((resolve, reject) => {
      child.on('message', (message: unknown) => {
        if (message !== BACKGROUND_PROCESS_READY || this.child !== child) return;
        this.ready = this.served = true;
        resolve();
      });
      child.on('exit', (code, signal) => {
        reject(new Error(`the background process ended during start-up (${signal ?? code})`));
        if (this.child !== child) return;
        this.child = undefined;
        if (this.served && !this.closing) this.restart(code, signal, started);
      });
    });
  }

  private restart(code: number | null, signal: NodeJS.Signals | null, started: number): void {
    this.restartMs = Date.now() - started >= STABLE_MS ? FIRST_RESTART_MS : Math.min(MAX_RESTART_MS, this.restartMs * 2);
    this.logger.warn({ code, signal, restartInMs: this.restartMs }, 'background process ended; starting it again');
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      // A start that fails ends the process, which schedules the next try.
      if (!this.closing) this.start().catch(() => undefined);
    }, this.restartMs);
  }

  /** Asks the process to stop (its jobs in progress finish) and waits until it has exited. */
  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // Before it is ready, it has no job in progress, and might not hear the message yet.
    if (this.ready && child.connected) child.send(BACKGROUND_PROCESS_CLOSE);
    else child.kill('SIGKILL');
    await exited;
  }
}
