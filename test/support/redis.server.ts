import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A free TCP port on 127.0.0.1, as the OS hands it out. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A redis-server of our own, on its own port and directory, for tests that kill or empty Redis: the
 * shared one on 6379 is never touched. It writes an append-only file (fsync every second, as usually
 * run); a restart either replays it or starts without it, i.e. empty.
 */
export class RedisServer {
  private child: ChildProcess | undefined;
  private dir = '';

  private constructor(readonly port: number) {}

  static async start(port?: number): Promise<RedisServer> {
    const server = new RedisServer(port ?? (await freePort()));
    server.dir = await fs.mkdtemp(path.join(os.tmpdir(), `redis-${server.port}-`));
    await server.launch();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the server (again) on the same port and directory. */
  private async launch(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec'];
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server on ${this.port} did not start: ${out}`)), 10000);
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', () => {
        clearTimeout(timer);
        reject(new Error(`redis-server on ${this.port} exited: ${out}`));
      });
    });
    child.stdout!.resume();
  }

  /** Kills the server (SIGKILL: no final save) and waits for it to end. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const ended = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await ended;
  }

  /** Kills and starts again: with `keepData` the append-only file is replayed, without it Redis starts empty. */
  async restart(keepData: boolean): Promise<void> {
    await this.kill();
    if (!keepData) await fs.rm(path.join(this.dir, 'appendonlydir'), { recursive: true, force: true });
    await this.launch();
  }

  async stop(): Promise<void> {
    await this.kill();
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}
