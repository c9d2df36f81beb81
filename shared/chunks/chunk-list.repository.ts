import type { Knex } from 'knex';
import { CHUNKING, packChunks, unpackChunks, type ContentChunk } from '../protocol/chunking';

/** A content's chunk list as kept: the content it describes and its chunks. */
export interface StoredChunkList {
  storageKey: string;
  sha256: string;
  size: number;
  chunks: ContentChunk[];
}

interface ChunkListRow {
  storage_key: string;
  content_sha256: string;
  size_bytes: number | string;
  chunks: Buffer;
}

/**
 * The only SQL about chunk lists. A list is found by its content's storage key, which the caller has
 * read from a row scoped to the owner; lists made by another chunking algorithm are not returned.
 */
export class ChunkListRepository {
  constructor(private readonly db: Knex) {}

  async find(storageKey: string): Promise<StoredChunkList | undefined> {
    const row = (await this.db('content_chunk_lists')
      .where({ storage_key: storageKey, algorithm: CHUNKING.algorithm })
      .first('storage_key', 'content_sha256', 'size_bytes', 'chunks')) as ChunkListRow | undefined;
    if (!row) return undefined;
    return { storageKey: row.storage_key, sha256: row.content_sha256, size: Number(row.size_bytes), chunks: unpackChunks(row.chunks) };
  }

  /** Keeps a list; a list kept already for the key (made by a concurrent request) stays. */
  async save(list: StoredChunkList): Promise<void> {
    await this.db.raw(
      'INSERT IGNORE INTO content_chunk_lists (storage_key, content_sha256, size_bytes, algorithm, chunks, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      [list.storageKey, list.sha256, list.size, CHUNKING.algorithm, packChunks(list.chunks), new Date()],
    );
  }

  async remove(storageKey: string): Promise<void> {
    await this.db('content_chunk_lists').where({ storage_key: storageKey }).delete();
  }
}
