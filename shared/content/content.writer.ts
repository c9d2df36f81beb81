import type { Knex } from 'knex';
import { beforeCommit, type ChangeAuthor, type ChangeClock, type OwnerTransactions } from '../db/owner.transaction';
import type { Logger } from '../logger';
import type { ContentStore, StagedContent } from '../storage/content.store';
import { ContentCrcRepository, CRC32_MIN_BYTES } from './content-crc.repository';

/** What the work inside the owner's transaction decided: the key the rows now name, and what it returns. */
export interface ContentPlacement<T> {
  /** The new content key, named by the rows written; the staged bytes are placed under it before the commit. */
  key: string;
  /** The key the rows named before, removed once the commit is done (replacement). */
  replacedKey?: string | null;
  /** Content the rows stopped naming (dropped versions), removed once the commit is done. */
  droppedKeys?: string[];
  /** The new content's media type, for what follows a commit (thumbnails of images). */
  mimeType?: string | null;
  result: T;
}

/**
 * Told of each content once its commit is done (the thumbnail and chunk-list requests); must not
 * throw or wait. `listed`: the committing path keeps the content's chunk list itself (a delta upload).
 */
export type ContentCommitted = (content: { storageKey: string; sha256: string; size: number; mimeType: string | null; listed: boolean }) => void;

export interface CommitInput<T> {
  /** Whose tree changes, and the device whose request changes it. */
  author: ChangeAuthor;
  staged: StagedContent;
  /** The caller keeps the new content's chunk list itself (a delta upload checked it). */
  listed?: boolean;
  /** Checks that need no lock (a declared digest); a failure discards the staged bytes, no lock is taken. */
  check?: () => void;
  /** The rows' side, in the owner's transaction: reads, preconditions, writes; names the key. */
  decide: (trx: Knex.Transaction, clock: ChangeClock) => Promise<ContentPlacement<T>>;
}

/**
 * The one way staged bytes become a file's content, for every kind of upload (POST /files, PUT
 * content, tus completion): in the owner's transaction the rows are written, then the bytes placed
 * under the key they name (just before the commit, with those of the uploads sharing it); after the commit the replaced content is removed. If anything fails
 * before the commit, the placed bytes are removed and the rows and old bytes stay as they were. A
 * crash between the placing and the commit leaves the new key unreferenced, and one after the commit
 * leaves the old one: both are content no row names, which fsck reports. The staged bytes never
 * outlive the call. Uploads of one owner arriving together share one owner transaction
 * (OwnerTransactions.runTogether), each behind its own savepoint.
 */
export class ContentWriter {
  constructor(
    private readonly owners: OwnerTransactions,
    private readonly store: ContentStore,
    private readonly logger?: Logger,
    private readonly committed?: ContentCommitted,
  ) {}

  async commit<T>(input: CommitInput<T>): Promise<T> {
    const { staged } = input;
    let placed: string | undefined;
    let replaced: (string | null | undefined)[] = [];
    let mimeType: string | null = null;
    let consumed = false;
    try {
      input.check?.();
      const result = await this.owners.runTogether(input.author, async (trx, clock) => {
        const placement = await input.decide(trx, clock);
        replaced = [placement.replacedKey, ...(placement.droppedKeys ?? [])];
        mimeType = placement.mimeType ?? null;
        // Once every write of the transaction is decided, with the other uploads' placing.
        await beforeCommit(trx, async () => {
          await this.store.place(staged, placement.key);
          consumed = true;
          placed = placement.key;
          if (staged.crc32 !== undefined && staged.size >= CRC32_MIN_BYTES) await ContentCrcRepository.record(trx, staged.sha256, staged.crc32);
        });
        return placement.result;
        // Rerunnable: what `decide` and this work change outside the transaction is set again by a new run.
      }, { rerunnable: true });
      const committedKey = placed;
      placed = undefined;
      if (committedKey) this.committed?.({ storageKey: committedKey, sha256: staged.sha256, size: staged.size, mimeType, listed: input.listed ?? false });
      // Only once the commit is done: before that the old bytes are the ones being served.
      for (const key of replaced) if (key) await this.removeReplaced(key);
      return result;
    } finally {
      if (!consumed) await this.store.discard(staged);
      if (placed) await this.store.remove(placed);
    }
  }

  /** The content is committed either way; bytes left behind are an orphan that fsck reports. */
  private async removeReplaced(key: string): Promise<void> {
    try {
      await this.store.remove(key);
    } catch (err) {
      this.logger?.warn({ err, storageKey: key }, 'replaced content could not be removed');
    }
  }
}
