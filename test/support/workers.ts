import { createLogger } from '../../shared/logger';
import { openWorker, type OpenWorker, type WorkerOptions } from '../../services/worker/open.worker';
import type { TestEnv } from './harness';
import { spawnService, stopProcess, type ServiceProcess } from './processes';

export type { OpenWorker };

/**
 * A worker inside the test process, opened by the function main.ts opens it with, on the test's own
 * queues and database: its own pool under the session limits, the store claimed, the metrics. The
 * scheduled maintenance and the monitoring endpoints stay off unless asked for (tests that need them
 * start them with the timing they check).
 */
export function startInProcessWorkers(env: TestEnv, options: Omit<WorkerOptions, 'config' | 'logger'> = {}): Promise<OpenWorker> {
  return openWorker({ config: env.config, logger: createLogger('worker', 'silent'), maintenance: false, monitoringPort: null, ...options });
}

export type WorkerProcess = ServiceProcess;

/** A real worker process; resolves once it says it is ready. */
export function spawnWorker(env: TestEnv, extra: Record<string, string> = {}): Promise<WorkerProcess> {
  return spawnService('worker', 'worker ready', env, extra);
}

export const stopWorker = stopProcess;
