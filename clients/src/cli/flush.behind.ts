import type { FileHandle } from 'node:fs/promises';

/**
 * Bytes of a download (assembled or whole) written between flushes behind the writes: the flush
 * before the rename then waits for the last stretch only, not for all of a large file at once. Small,
 * because the kernel starts writing dirty pages back on its own only after seconds or gigabytes: until
 * the first flush the disk idles while the download outruns it.
 */
const SYNC_EVERY = 16 * 1024 * 1024;

/**
 * Flushes a file being written every SYNC_EVERY bytes, each flush behind the writes queued so far,
 * so that a download's final flush (before the rename that publishes it) waits for little.
 */
export class FlushBehind {
  private syncing: Promise<unknown> = Promise.resolve();
  private unsynced = 0;

  constructor(private readonly handle: FileHandle) {}

  /** `bytes` more were queued, the last of them written once `writing` resolves. */
  wrote(bytes: number, writing: Promise<unknown>): void {
    this.unsynced += bytes;
    if (this.unsynced < SYNC_EVERY) return;
    this.unsynced = 0;
    this.syncing = Promise.all([this.syncing, writing]).then(() => this.handle.datasync());
    // Met by `finish`; until then it must not count as unhandled.
    this.syncing.catch(() => undefined);
  }

  /** Once every write is done: the flushes under way (their failure is this one's), then the rest. */
  async finish(): Promise<void> {
    await this.syncing;
    await this.handle.sync();
  }

  /** On the way out after a failure: the flushes under way have ended, whatever they came to. */
  settled(): Promise<void> {
    return this.syncing.then(
      () => undefined,
      () => undefined,
    );
  }
}
