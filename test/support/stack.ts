import { Api } from './client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from './harness';
import { startInProcessWorkers, type OpenWorker } from './workers';

/** The whole service in this process: an isolated environment, the gateway, sync workers and a signed-in administrator. */
export interface TestStack {
  env: TestEnv;
  gateway: RunningGateway;
  workers: OpenWorker;
  admin: Api;
  /** Stops the workers, then the gateway, and drops the environment. */
  close(): Promise<void>;
}

export async function startStack(overrides: Record<string, string> = {}): Promise<TestStack> {
  const env = await createTestEnv(overrides);
  const gateway = await startGateway(env);
  const workers = await startInProcessWorkers(env);
  const admin = (await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password)).api;
  return {
    env,
    gateway,
    workers,
    admin,
    async close() {
      await workers.close();
      await gateway.close();
      await env.dropAll();
    },
  };
}
