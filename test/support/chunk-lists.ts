import { Api } from './client';
import { ADMIN, createTestEnv, startGateway, type RunningGateway, type TestEnv } from './harness';
import { stopWorker, type WorkerProcess } from './workers';
import { bullPrefix, connectRedis, type RedisConnection } from '../../shared/redis/redis.connection';

/**
 * What the chunk-list tests share: a gateway with its chunk-list queue, the administrator signed in,
 * a Redis connection of the test's own (connected, so its first command is sent) and the
 * deployment's queue prefix; a worker, once a test spawns one, is stopped with the rest.
 */
export interface ChunkListsSetup {
  env: TestEnv;
  gateway: RunningGateway;
  api: Api;
  redis: RedisConnection;
  prefix: string;
  worker?: WorkerProcess;
}

export async function startChunkLists(): Promise<ChunkListsSetup> {
  const env = await createTestEnv();
  const gateway = await startGateway(env);
  const { api } = await new Api(gateway.baseUrl).login(ADMIN.username, ADMIN.password);
  const redis = connectRedis(env.config, 'producer');
  // A producer queues nothing before it is connected.
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  return { env, gateway, api, redis, prefix: bullPrefix(env.config, env.config.queuePrefix) };
}

export async function stopChunkLists(setup: ChunkListsSetup | undefined): Promise<void> {
  if (setup?.worker) await stopWorker(setup.worker, 'SIGKILL');
  setup?.redis.disconnect();
  await setup?.gateway.close();
  await setup?.env.dropAll();
}
