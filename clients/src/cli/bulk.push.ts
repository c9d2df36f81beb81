import type { File } from '../../../shared/protocol';
import type { BulkUploadHeader } from '../../../shared/protocol/bulk';
import { ApiError } from '../sdk/errors';
import { stillWriting, type SyncContext } from './context';
import type { LocalNode } from './match';

/** What one file of a batch is sent as, and what becomes of it. */
export interface BatchItem {
  node: LocalNode;
  /** A new file (`id`, `name`, `folderId`) or a replacement (`fileId`, `ifMatch` or `ifNoneMatch`). */
  header: Omit<BulkUploadHeader, 'size'>;
  /** Records the service's answer (in the journal transaction of the batch). */
  done: (file: File) => void;
}

/**
 * Sends batches of small files, each many to a request, on `workers` requests at once. A file still
 * being written waits for the pass its write brings; one the service was too busy for, or every file
 * of a batch the service did not take whole (a service without the endpoint, a connection cut), goes
 * to `alone` to be sent on its own request; one refused is settled as its single upload would be.
 */
export async function sendBatches(
  ctx: SyncContext,
  batches: BatchItem[][],
  alone: (item: BatchItem) => void,
  refused: (item: BatchItem, err: ApiError) => Promise<void>,
  workers = 2,
): Promise<number> {
  let sent = 0;
  const worker = async () => {
    for (let next = batches.shift(); next && !ctx.signal.aborted; next = batches.shift()) {
      const moving = await Promise.all(next.map((item) => stillWriting(ctx, item.node.entry)));
      const batch = next.filter((_, i) => !moving[i]);
      if (batch.length === 0) continue;
      const results = await ctx.transfers.bulk.upload(batch.map((item) => ({ diskPath: item.node.entry.disk, header: item.header })));
      if (!results) {
        batch.forEach(alone);
        continue;
      }
      // The batch's files are recorded in one journal transaction.
      const failed: [BatchItem, ApiError][] = [];
      ctx.journal.tx(() => {
        for (const [i, item] of batch.entries()) {
          const result = results[i]!;
          if (result instanceof ApiError && (result.status === 503 || result.status === 429)) alone(item);
          else if (result instanceof ApiError) failed.push([item, result]);
          else {
            item.done(result);
            sent++;
          }
        }
      });
      for (const [item, err] of failed) await refused(item, err);
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return sent;
}
