import type { Logger } from '../logger';
import { ContentChunker, type ContentChunk } from '../protocol/chunking';
import type { ContentStore } from '../storage/content.store';
import type { ChunkListRepository, StoredChunkList } from './chunk-list.repository';

/**
 * Makes a content's chunk list from its stored bytes and keeps it under the content's key, unless one
 * is kept already. A list whose content was removed while it was being made is removed again: a key
 * is never reused, so such a row could describe nothing, but it would stay. Throws
 * ContentNotFoundError when the content is gone before it is read.
 */
export async function makeChunkList(
  store: ContentStore,
  lists: ChunkListRepository,
  content: { storageKey: string; sha256: string },
  logger?: Logger,
  pause?: () => Promise<void>,
): Promise<{ list: StoredChunkList; made: boolean }> {
  const kept = await lists.find(content.storageKey);
  if (kept) return { list: kept, made: false };
  const handle = await store.open(content.storageKey);
  const chunks = await cut((await handle.read()) as AsyncIterable<Buffer>, pause);
  const list = { storageKey: content.storageKey, sha256: content.sha256, size: handle.size, chunks };
  if (await keepChunkList(lists, list, logger)) {
    // Removed while it was read: its removal may have come before the save, which would then stay.
    if (!(await store.stat(list.storageKey))) await lists.remove(list.storageKey);
  }
  return { list, made: true };
}

/** Bytes cut between two calls of `pause`. */
const PAUSE_EVERY = 8 * 1024 * 1024;

/** Cuts the pieces as they come; every PAUSE_EVERY bytes, `pause` may hold the cutting (and the reading) back. */
async function cut(pieces: AsyncIterable<Buffer>, pause?: () => Promise<void>): Promise<ContentChunk[]> {
  const chunker = new ContentChunker();
  const chunks: ContentChunk[] = [];
  let sincePause = 0;
  for await (const piece of pieces) {
    chunks.push(...chunker.update(piece));
    sincePause += piece.length;
    if (pause && sincePause >= PAUSE_EVERY) {
      sincePause = 0;
      await pause();
    }
  }
  chunks.push(...chunker.finish());
  return chunks;
}

/** Keeps a list (made while the content's bytes went by, or from them); a failure costs only a later remake. */
export async function keepChunkList(lists: ChunkListRepository, list: StoredChunkList, logger?: Logger): Promise<boolean> {
  try {
    await lists.save(list);
    return true;
  } catch (err) {
    logger?.warn({ err, storageKey: list.storageKey }, 'chunk list could not be kept');
    return false;
  }
}
