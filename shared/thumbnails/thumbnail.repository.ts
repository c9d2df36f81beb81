import type { Knex } from 'knex';
import { digestsStillStored } from '../content/content.digests';

export type ThumbnailState = 'making' | 'ready' | 'unreadable' | 'removing';

/**
 * The only SQL about thumbnails (table content_thumbnails): one row per content digest, whose images
 * live in the content store (thumbnail.sizes.ts). Rows are not scoped to a user: the digest is that
 * of a content the caller has already been allowed to read.
 */
export class ThumbnailRepository {
  constructor(private readonly db: Knex) {}

  async state(sha256: string): Promise<ThumbnailState | undefined> {
    const row = (await this.db('content_thumbnails').where({ content_sha256: sha256 }).first('state')) as { state: ThumbnailState } | undefined;
    return row?.state;
  }

  /** Records `state` for the digest, whatever was there (a worker starting, finishing or giving up). */
  async set(sha256: string, state: Exclude<ThumbnailState, 'removing'>): Promise<void> {
    await this.db.raw(
      'INSERT INTO content_thumbnails (content_sha256, state, updated_at) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE state = VALUES(state), updated_at = VALUES(updated_at)',
      [sha256, state, new Date()],
    );
  }

  /** Digests after `after`, in order, `limit` of them (the sweep's pages). */
  async page(after: string, limit: number): Promise<{ sha256: string; state: ThumbnailState }[]> {
    const rows = (await this.db('content_thumbnails')
      .where('content_sha256', '>', after)
      .orderBy('content_sha256')
      .limit(limit)
      .select('content_sha256', 'state')) as { content_sha256: string; state: ThumbnailState }[];
    return rows.map((r) => ({ sha256: r.content_sha256, state: r.state }));
  }

  /** Which of `digests` some file or version still has as content (trash included, purged not). */
  stillStored(digests: string[]): Promise<Set<string>> {
    return digestsStillStored(this.db, digests);
  }

  /** A content key holding the digest's bytes now, to make its thumbnails from; undefined when none. */
  async someKey(sha256: string): Promise<string | undefined> {
    const file = (await this.db('resources').where({ content_sha256: sha256 }).whereNotNull('storage_key').first('storage_key')) as
      | { storage_key: string }
      | undefined;
    if (file) return file.storage_key;
    const version = (await this.db('file_versions').where({ content_sha256: sha256 }).first('storage_key')) as { storage_key: string } | undefined;
    return version?.storage_key;
  }

  /** Marks the digest's row for removal; false when it has none. */
  async markRemoving(sha256: string): Promise<boolean> {
    const n = await this.db('content_thumbnails').where({ content_sha256: sha256 }).update({ state: 'removing', updated_at: new Date() });
    return n > 0;
  }

  /** Drops the row once its images are gone, unless a worker has made them again meanwhile. */
  async dropRemoved(sha256: string): Promise<void> {
    await this.db('content_thumbnails').where({ content_sha256: sha256, state: 'removing' }).delete();
  }
}
