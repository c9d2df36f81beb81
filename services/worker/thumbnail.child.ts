import type { Worker } from 'bullmq';
import { loadConfig } from '../../shared/config';
import { createDb } from '../../shared/db/knex';
import { createLogger } from '../../shared/logger';
import { createContentStore } from '../../shared/storage/store.factory';
import { limitImageThreads, lowerThreads } from '../../shared/thumbnails/thumbnail.maker';
import { THUMBNAIL_PROCESS_CLOSE, THUMBNAIL_PROCESS_READY } from './thumbnail.process';
import { consumeThumbnails } from './thumbnail.workers';
import { workerSession } from './worker.session';

/**
 * The worker's thumbnail consumer as a process of its own (started by thumbnail.process.ts): the
 * BullMQ worker of the thumbnail queue, its pool and content store, and the images made here. Once
 * it consumes the queue every thread runs at nice 19, the main thread included, so a job's queue
 * calls, SQL, store writes and images all take only what the uploads and sync batches leave of the
 * cores. Its configuration is the worker's environment; it logs through the worker's logger format,
 * on the same output.
 */
const config = loadConfig(process.env, 'worker');
const logger = createLogger('worker', config.logLevel);
// One connection per job in progress, under the worker's session limits.
const db = createDb(config.databaseUrl, {
  max: config.thumbnailConcurrency,
  session: workerSession({ lockWaitS: config.syncLockWaitS, deadlineMs: config.syncBatchDeadlineMs }),
});
let worker: Worker | undefined;
let closing: Promise<void> | undefined;

/**
 * Lets the jobs in progress finish (within the shutdown timeout: past it, BullMQ hands a job whose
 * lock lapses to another worker), then exits.
 */
function close(): Promise<void> {
  closing ??= (async () => {
    const bound = new Promise((resolve) => setTimeout(resolve, config.shutdownTimeoutMs).unref());
    await Promise.race([worker?.close(), bound]).catch((err: unknown) => logger.warn({ err }, 'thumbnail process: closing failed'));
    await Promise.race([db.destroy(), new Promise((resolve) => setTimeout(resolve, 300).unref())]).catch(() => undefined);
    process.exit(0);
  })();
  return closing;
}

process.on('message', (message: unknown) => {
  if (message === THUMBNAIL_PROCESS_CLOSE) void close();
});
// The worker gone (crashed, killed): nobody is left to restart or stop this process.
process.on('disconnect', () => void close());
// A signal to the whole process group (Ctrl-C in a terminal) reaches this process too: the worker,
// which got it as well, says when to stop, and waits for this process before exiting itself.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => undefined);

(async () => {
  limitImageThreads();
  worker = await consumeThumbnails(config, db, logger, createContentStore(config));
  // Only now: the start-up (modules, connections) at nice 19 would hold up the worker's own start on
  // a busy machine, which waits for this one. Linux keeps a nice value per thread and a thread starts
  // at that of the thread that starts it, so lowering the threads there are covers libuv's and
  // libvips' started later. A job taken in the moment before runs on, lowered.
  if (process.platform === 'linux') lowerThreads(() => true);
  if (closing) return;
  process.send?.(THUMBNAIL_PROCESS_READY);
})().catch((err: unknown) => {
  logger.error({ err }, 'thumbnail process failed to start');
  process.exit(1);
});
