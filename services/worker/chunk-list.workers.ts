import { Worker } from 'bullmq';
import type { Config } from '../../shared/config';
import type { Db } from '../../shared/db/knex';
import type { Logger } from '../../shared/logger';
import { makeChunkList } from '../../shared/chunks/chunk-list.making';
import { ChunkListRepository } from '../../shared/chunks/chunk-list.repository';
import { ListClaims, type ClaimClient } from '../../shared/chunks/list.claims';
import { LIST_DEFER_MAX_MS, untilUploadsQuiet, uploadsStreamingKey, type MarkClient } from '../../shared/chunks/uploads.quiet';
import { CHUNK_LIST_QUEUE, type ChunkListJobData, type ChunkListJobResult } from '../../shared/queue/chunk-list.contract';
import { bullPrefix, closingWith, connectRedis } from '../../shared/redis/redis.connection';
import { ContentNotFoundError, type ContentStore } from '../../shared/storage/content.store';

/**
 * Consumes the chunk-list queue one job at a time: a job reads one content once and cuts it where it
 * is read. Where it is built, in the worker's background process, whose every thread runs at nice 19
 * (background.child.ts), so lists take only what uploads and sync batches leave of the cores; and
 * a job starts, and goes on cutting, only while no gateway receives a large body, at most until
 * LIST_DEFER_MAX_MS after it was enqueued (shared/chunks/uploads.quiet.ts). A content a gateway is
 * cutting already, for a device that asked first, is left to it (shared/chunks/list.claims.ts).
 */
export async function consumeChunkLists(config: Config, db: Db, logger: Logger, store: ContentStore): Promise<Worker<ChunkListJobData, ChunkListJobResult>> {
  const lists = new ChunkListRepository(db);
  const connection = connectRedis(config, 'blocking');
  const streaming = uploadsStreamingKey(bullPrefix(config, config.queuePrefix));
  const marks = connection as unknown as MarkClient;
  const claims = new ListClaims(async () => connection as unknown as ClaimClient, bullPrefix(config, config.queuePrefix));
  const worker = closingWith(
    new Worker<ChunkListJobData, ChunkListJobResult>(
      CHUNK_LIST_QUEUE,
      async (job) => {
        const started = Date.now();
        const quiet = () => untilUploadsQuiet(marks, streaming, job.timestamp + LIST_DEFER_MAX_MS);
        try {
          await quiet();
          const waited = Date.now() - started;
          const claim = await claims.claim(job.data.storageKey);
          let result: ChunkListJobResult = { made: 0, chunks: 0, gone: 0, elsewhere: 1 };
          if (claim) {
            const { list, made } = await makeChunkList(store, lists, job.data, logger, quiet).finally(() => claim.release());
            result = { made: made ? 1 : 0, chunks: list.chunks.length, gone: 0, elsewhere: 0 };
          }
          logger.debug({ jobId: job.id, ...result, waitedMs: waited, ms: Date.now() - started }, 'chunk list job done');
          return result;
        } catch (err) {
          // Replaced and removed before its turn: nothing to describe.
          if (err instanceof ContentNotFoundError) return { made: 0, chunks: 0, gone: 1, elsewhere: 0 };
          throw err;
        }
      },
      { connection, prefix: bullPrefix(config, config.queuePrefix), concurrency: 1 },
    ),
    connection,
  );
  worker.on('failed', (job, err) => logger.info({ jobId: job?.id, err: err.message }, 'chunk list job failed'));
  worker.on('error', (err) => logger.warn({ err: err.message }, 'chunk list worker connection error'));
  await worker.waitUntilReady();
  return worker;
}
