import { createLogger } from '../../shared/logger';
import type { BatchObserver } from '../../services/worker/inbox.applier';
import { startSyncWorkers, type SyncWorkers } from '../../services/worker/sync.workers';
import type { TestEnv } from './harness';
import { spawnService, stopProcess, type ServiceProcess } from './processes';

/** Sync workers inside the test process, on the test's own queues and database. */
export function startInProcessWorkers(env: TestEnv, observe?: BatchObserver): Promise<SyncWorkers> {
  return startSyncWorkers(env.config, env.db, createLogger('worker', 'silent'), observe);
}

export type WorkerProcess = ServiceProcess;

/** A real worker process; resolves once it says it is ready. */
export function spawnWorker(env: TestEnv, extra: Record<string, string> = {}): Promise<WorkerProcess> {
  return spawnService('worker', 'worker ready', env, extra);
}

export const stopWorker = stopProcess;
