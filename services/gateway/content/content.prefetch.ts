import type { ResourceRecord } from '../../../shared/db/repositories/resource.record';
import type { ByteRange, ContentStore, PrefetchedContent } from '../../../shared/storage/content.store';

/** Files whose opening is remembered, the most recent kept. */
const REMEMBERED = 4096;

/**
 * Reads of content started before the file's row is read, for a file opened before by its owner
 * (the ranges of one video, a downloader's parallel parts): the row of its last opening names its
 * content key, and the object store's round trip runs while the row is read again. The row decides:
 * bytes reach the client only if it still names that key. A file replaced, deleted or not the
 * caller's gets nothing from the early read, which is cancelled.
 */
export class ContentPrefetch {
  private readonly opened = new Map<string, ResourceRecord>();

  constructor(private readonly store: ContentStore) {}

  /**
   * Starts the read a download of `id` by `userId` would make, when that file was opened before and
   * the store can start reads early; `wanted` says which bytes of it (undefined: none).
   */
  start(userId: string, id: string, wanted: (file: ResourceRecord) => { range: ByteRange | undefined } | undefined): PrefetchedContent | undefined {
    if (!this.store.prefetch) return undefined;
    const file = this.opened.get(`${userId}:${id}`);
    if (!file?.storageKey) return undefined;
    const bytes = wanted(file);
    return bytes && this.store.prefetch(file.storageKey, bytes.range);
  }

  /** Notes that `userId` opened the content `file` names. */
  remember(userId: string, file: ResourceRecord): void {
    if (!this.store.prefetch) return;
    const key = `${userId}:${file.id}`;
    this.opened.delete(key);
    this.opened.set(key, file);
    if (this.opened.size > REMEMBERED) this.opened.delete(this.opened.keys().next().value as string);
  }
}
