import type { Queue } from 'bullmq';
import type { Logger } from '../logger';
import { DELTA_MIN_BYTES } from '../protocol/chunking';
import { CHUNK_LIST_JOB_OPTIONS, MAKE_CHUNK_LIST_JOB, chunkListJobId, type ChunkListJobData, type ChunkListJobResult } from '../queue/chunk-list.contract';

/**
 * Asks the workers for the chunk list of each large content a whole upload committed. Never waits on
 * Redis in the caller's request: a request that could not be enqueued is logged, and the list is made
 * when it is first asked for (`GET /files/:id/chunks`).
 */
export class ChunkListRequests {
  constructor(
    private readonly queue: Queue<ChunkListJobData, ChunkListJobResult>,
    private readonly logger?: Logger,
  ) {}

  /** For ContentWriter: after every commit; contents below the size a client sends as a delta are ignored. */
  readonly committed = (content: { storageKey: string; sha256: string; size: number }): void => {
    if (content.size >= DELTA_MIN_BYTES) void this.request(content.storageKey, content.sha256);
  };

  async request(storageKey: string, sha256: string): Promise<void> {
    try {
      await this.queue.add(MAKE_CHUNK_LIST_JOB, { storageKey, sha256 }, { ...CHUNK_LIST_JOB_OPTIONS, jobId: chunkListJobId(storageKey) });
    } catch (err) {
      this.logger?.warn({ err, storageKey }, 'chunk list job could not be enqueued');
    }
  }
}
