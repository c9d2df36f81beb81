import type { Worker } from 'bullmq';
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../../shared/config';
import { createDb } from '../../shared/db/knex';
import { createLogger } from '../../shared/logger';
import { createContentStore } from '../../shared/storage/store.factory';
import { IMAGE_THREAD_NICE, limitImageThreads, lowerThreads } from '../../shared/thumbnails/thumbnail.maker';
import { BACKGROUND_PROCESS_CLOSE, BACKGROUND_PROCESS_READY } from './background.process';
import { consumeChunkLists } from './chunk-list.workers';
import { consumeThumbnails } from './thumbnail.workers';
import { workerSession } from './worker.session';

/**
 * The worker's background jobs as a process of its own (started by background.process.ts): the
 * BullMQ workers of the thumbnail and chunk-list queues, their pool and content store; images are
 * made and contents read and cut here. Once it consumes the queues every thread runs at nice 19, the
 * main thread included, so a job's queue calls, SQL, store reads and writes, images and cutting all
 * take only what the uploads and sync batches leave of the cores. Its configuration is the worker's
 * environment; it logs through the worker's logger format, on the same output.
 */
const config = loadConfig(process.env, 'worker');
const logger = createLogger('worker', config.logLevel);
// One connection per job in progress (thumbnails, and one chunk list), under the worker's session limits.
const db = createDb(config.databaseUrl, {
  max: config.thumbnailConcurrency + 1,
  session: workerSession({ lockWaitS: config.syncLockWaitS, deadlineMs: config.syncBatchDeadlineMs }),
});
let workers: Worker[] = [];
let closing: Promise<void> | undefined;

/**
 * Lets the jobs in progress finish (within the shutdown timeout: past it, BullMQ hands a job whose
 * lock lapses to another worker), then exits.
 */
function close(): Promise<void> {
  closing ??= (async () => {
    const bound = new Promise((resolve) => setTimeout(resolve, config.shutdownTimeoutMs).unref());
    await Promise.race([Promise.all(workers.map((w) => w.close())), bound]).catch((err: unknown) => logger.warn({ err }, 'background process: closing failed'));
    await Promise.race([db.destroy(), new Promise((resolve) => setTimeout(resolve, 300).unref())]).catch(() => undefined);
    process.exit(0);
  })();
  return closing;
}

process.on('message', (message: unknown) => {
  if (message === BACKGROUND_PROCESS_CLOSE) void close();
});
// The worker gone (crashed, killed): nobody is left to restart or stop this process.
process.on('disconnect', () => void close());
// Signals are left to the worker (systemd and container runtimes signal every process of the service
// at once): it says when to stop, and waits for this process before exiting itself.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => undefined);

(async () => {
  limitImageThreads();
  const store = createContentStore(config);
  workers = await Promise.all([consumeThumbnails(config, db, logger, store), consumeChunkLists(config, db, logger, store)]);
  // Only now: the start-up (modules, connections) at nice 19 would hold up the worker's own start on
  // a busy machine, which waits for this one. Linux keeps a nice value per thread and a thread starts
  // at that of the thread that starts it, so lowering the threads there are covers libuv's and
  // libvips' started later. A job taken in the moment before runs on, lowered.
  if (process.platform === 'linux') {
    lowerThreads(() => true);
    // With autogroup, nice values only order the threads of one session, and sessions share the CPU
    // equally: the worker's service would get half of it against the gateway's. This process has a
    // session of its own (background.process.ts), lowered as a whole here.
    try {
      writeFileSync('/proc/self/autogroup', String(IMAGE_THREAD_NICE));
    } catch {
      // No autogroup: the threads' nice values alone order them.
    }
  }
  if (closing) return;
  process.send?.(BACKGROUND_PROCESS_READY);
})().catch((err: unknown) => {
  logger.error({ err }, 'background process failed to start');
  process.exit(1);
});
