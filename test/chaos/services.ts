import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..', '..');
const MAIN = { gateway: path.join(ROOT, 'dist', 'services', 'gateway', 'main.js'), worker: path.join(ROOT, 'dist', 'services', 'worker', 'main.js') };

/** A gateway or worker process of the chaos run, its output appended to a log file of its own. */
export class Service {
  child: ChildProcess | undefined;
  private log: WriteStream;
  private out = '';

  constructor(
    readonly name: string,
    private readonly kind: 'gateway' | 'worker',
    private readonly env: Record<string, string>,
    logDir: string,
  ) {
    this.log = createWriteStream(path.join(logDir, `${name}.log`), { flags: 'a' });
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process and resolves once it printed `ready` (a log message). */
  async start(ready: string, timeoutMs = 30000): Promise<void> {
    this.out = '';
    const child = spawn(process.execPath, [MAIN[this.kind]], { env: { ...process.env, ...this.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const keep = (d: Buffer) => {
      this.log.write(d);
      if (this.out.length < 100_000) this.out += d.toString();
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const deadline = Date.now() + timeoutMs;
    while (!this.out.includes(ready)) {
      if (!this.running) throw new Error(`${this.name} exited during start-up: ${this.out.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`${this.name} not ready within ${timeoutMs} ms: ${this.out.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child!.kill(signal);
  }

  /** Sends `signal` and waits for the process to end. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.running) return;
    const ended = new Promise((r) => this.child!.once('exit', r));
    this.child!.kill(signal);
    await ended;
  }

  close(): void {
    this.log.end();
  }
}
