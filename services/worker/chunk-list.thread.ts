import { readlinkSync } from 'node:fs';
import os from 'node:os';
import { parentPort } from 'node:worker_threads';
import { ContentChunker, packChunks, type ContentChunk } from '../../shared/protocol/chunking';

/**
 * The thread that cuts contents for the chunk-list jobs (chunk-list.cutter.ts). Linux keeps a nice
 * value per thread: this one lowers its own to 19, so uploads, sync batches and the database get the
 * cores first and lists take what is left. Each piece is answered once cut, which is what keeps the
 * reading side at most a few pieces ahead; `end` answers the packed list and starts the next content.
 */
try {
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(tid)) os.setPriority(tid, 19);
} catch {
  // Not Linux, or no /proc: the thread runs at the process's priority.
}

let chunker = new ContentChunker();
let chunks: ContentChunk[] = [];
parentPort!.on('message', (message: { piece?: Uint8Array; end?: true }) => {
  if (message.piece) {
    for (const c of chunker.update(message.piece)) chunks.push(c);
    parentPort!.postMessage({ cut: true });
    return;
  }
  for (const c of chunker.finish()) chunks.push(c);
  parentPort!.postMessage({ packed: packChunks(chunks) });
  chunker = new ContentChunker();
  chunks = [];
});
