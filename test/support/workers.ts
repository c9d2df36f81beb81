import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '../../shared/logger';
import { startSyncWorkers, type SyncWorkers } from '../../services/worker/sync.workers';
import type { TestEnv } from './harness';

/** Sync workers inside the test process, on the test's own queues and database. */
export function startInProcessWorkers(env: TestEnv): Promise<SyncWorkers> {
  return startSyncWorkers(env.config, env.db, createLogger('worker', 'silent'));
}

const WORKER_MAIN = path.join(__dirname, '..', '..', 'dist', 'services', 'worker', 'main.js');

export interface WorkerProcess {
  child: ChildProcess;
  output: () => string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<number | string | null>;
}

/** A real worker process built by `npm run build`; resolves once it says it is ready. */
export async function spawnWorker(env: TestEnv, extra: Record<string, string> = {}): Promise<WorkerProcess> {
  if (!existsSync(WORKER_MAIN)) throw new Error(`${WORKER_MAIN} is missing: run "npm run build" (npm test does)`);
  const child = spawn(process.execPath, [WORKER_MAIN], {
    env: { ...process.env, ...env.env, LOG_LEVEL: 'info', WORKER_PORT: '0', ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string | null>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not start: ${out}`)), 20000);
    const check = () => {
      if (out.includes('worker ready')) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    child.on('exit', () => {
      clearTimeout(timer);
      reject(new Error(`worker exited before it was ready: ${out}`));
    });
  });
  return { child, output: () => out, exited };
}

export async function stopWorker(worker: WorkerProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill(signal);
  await worker.exited;
}
