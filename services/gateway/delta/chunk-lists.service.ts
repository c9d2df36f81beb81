import { notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import type { Logger } from '../../../shared/logger';
import type { ResourceRepository } from '../../../shared/db/repositories/resource.repository';
import type { ResourceRecord } from '../../../shared/db/repositories/resource.record';
import type { ChunkListRepository, StoredChunkList } from '../../../shared/chunks/chunk-list.repository';
import { keepChunkList, makeChunkList } from '../../../shared/chunks/chunk-list.making';
import type { ListClaims } from '../../../shared/chunks/list.claims';
import { CHUNKING, type ChunkList, type ContentChunk } from '../../../shared/protocol/chunking';
import { ContentNotFoundError, type ContentStore } from '../../../shared/storage/content.store';

/** How long a request waits for another maker's list before cutting its own: the device's pass waits as long. */
const WAIT_FOR_MAKER_MS = 2000;

/**
 * Chunk lists of files' current contents (`GET /files/:id/chunks`), kept under the content's key: a
 * worker makes the list of a large whole upload after its commit (shared/queue/chunk-list.contract.ts),
 * so the upload itself pays nothing for it; a delta upload keeps the list it checked; any other
 * content's list is made from the stored bytes the first time it is asked for, unless a worker or
 * another gateway is cutting it (shared/chunks/list.claims.ts): that list is awaited, for at most
 * WAIT_FOR_MAKER_MS, as a device asks for it right after downloading the content, while the
 * worker's job for it often runs.
 */
export class ChunkListsService {
  /** Lists being made, by content key, so that devices asking together read the bytes once. */
  private readonly making = new Map<string, Promise<StoredChunkList>>();

  constructor(
    private readonly resources: ResourceRepository,
    private readonly store: ContentStore,
    private readonly lists: ChunkListRepository,
    private readonly logger?: Logger,
    private readonly claims?: ListClaims,
  ) {}

  async of(userId: string, fileId: string): Promise<ChunkList> {
    // A content replaced between reading the row and opening its bytes: the row is read again.
    for (let attempt = 0; ; attempt++) {
      const file = isId(fileId) ? await this.resources.findActive(userId, fileId, 'file') : undefined;
      if (!file) throw notFound('no such file');
      if (!file.storageKey || !file.contentSha256) throw notFound('this file has no content');
      try {
        const list = await this.listOf(file);
        return present(file, list.chunks);
      } catch (err) {
        if (!(err instanceof ContentNotFoundError) || attempt >= 2) throw err;
      }
    }
  }

  /** The list kept for a content key, if any (never made here: a delta's base is read once, by the assembly). */
  async kept(storageKey: string): Promise<ContentChunk[] | undefined> {
    return (await this.lists.find(storageKey))?.chunks;
  }

  /** Keeps the list made while the content's bytes went by (a delta upload); a failure costs only a later remake. */
  async keep(list: StoredChunkList): Promise<void> {
    await keepChunkList(this.lists, list, this.logger);
  }

  private async listOf(file: ResourceRecord): Promise<StoredChunkList> {
    const key = file.storageKey!;
    const kept = await this.lists.find(key);
    if (kept) return kept;
    let making = this.making.get(key);
    if (!making) {
      making = this.make(key, file.contentSha256!).finally(() => this.making.delete(key));
      this.making.set(key, making);
    }
    return making;
  }

  private async make(storageKey: string, sha256: string): Promise<StoredChunkList> {
    let claim = await this.claims?.claim(storageKey);
    if (this.claims && !claim) {
      const made = await this.claims.waitWhileHeld(storageKey, () => this.lists.find(storageKey), Date.now() + WAIT_FOR_MAKER_MS);
      if (made) return made;
      claim = await this.claims.claim(storageKey);
    }
    try {
      return (await makeChunkList(this.store, this.lists, { storageKey, sha256 }, this.logger)).list;
    } finally {
      await claim?.release();
    }
  }
}

function present(file: ResourceRecord, chunks: ContentChunk[]): ChunkList {
  return {
    fileId: file.id,
    rev: file.rev,
    size: file.sizeBytes,
    sha256: file.contentSha256!,
    chunking: { ...CHUNKING },
    chunks,
  };
}
