import { promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { Transform, type Readable, type TransformCallback } from 'node:stream';

/*
 * What makes the local store's content survive a power cut, not only a killed process: a content's
 * bytes are on disk before the rename that names it, and the rename is on disk before the database
 * commit that points at it (MariaDB's commit is itself flushed). Without the first, a cut could leave
 * a committed row over an empty file; without the second, over no file at all.
 */

/** Opens `target` for reading and flushes it: `datasync` a file's bytes (and the size that reads them), `sync` a folder's entries. */
async function flushOpened(target: string, how: 'datasync' | 'sync'): Promise<void> {
  const handle = await fs.open(target, 'r');
  try {
    await handle[how]();
  } finally {
    await handle.close();
  }
}

/** Flushes a file's bytes to disk. */
export const syncFile = (file: string): Promise<void> => flushOpened(file, 'datasync');

/** Flushes a folder's entries (renames, links, creations in it) to disk. */
export const syncFolder = (dir: string): Promise<void> => flushOpened(dir, 'sync');

/**
 * Folder flushes shared by the renames that ask for them together: the uploads that share an owner
 * transaction mostly come from one device and land in its folder (shared/content/content.keys.ts),
 * and one flush started after the last of their renames covers them all. A flush under way may have
 * begun before a caller's rename, so that caller waits for the next one, which starts once it ends.
 */
export class FolderFlushes {
  private readonly folders = new Map<string, { running?: Promise<void>; next?: Promise<void> }>();

  constructor(private readonly sync: (dir: string) => Promise<void> = syncFolder) {}

  /** Resolves once every change made in `dir` before this call is on disk. */
  flush(dir: string): Promise<void> {
    let state = this.folders.get(dir);
    if (!state) {
      state = {};
      this.folders.set(dir, state);
    }
    if (state.next) return state.next;
    const s = state;
    const start = () => {
      s.next = undefined;
      const running = this.sync(dir).finally(() => {
        if (s.running === running) s.running = undefined;
        if (!s.running && !s.next) this.folders.delete(dir);
      });
      s.running = running;
      return running;
    };
    // Started on the next turn: the renames that end in this one share it.
    const after = s.running ? s.running.catch(() => undefined) : new Promise<void>((resolve) => setImmediate(resolve));
    s.next = after.then(start);
    return s.next;
  }
}

/** Bytes written between two flushes behind the writes of a staged file (FlushBehind). */
const FLUSH_EVERY = 16 * 1024 * 1024;

/**
 * Passes a staged file's bytes on to its write stream and flushes the file every FLUSH_EVERY bytes
 * behind them, so that the disk writes while the body still arrives and the flush before the file
 * is placed waits for the last stretch only. The flushes go through the file's handle, whose close
 * waits for them; the first that fails fails the stream at its end.
 */
export class FlushBehind extends Transform {
  private flushing: Promise<void> = Promise.resolve();
  private unflushed = 0;

  /** `from`: the offset the writes start at, so that a file written in several requests is flushed every FLUSH_EVERY bytes all the same. */
  constructor(
    private readonly handle: FileHandle,
    from = 0,
  ) {
    super();
    this.unflushed = from % FLUSH_EVERY;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.unflushed += chunk.length;
    if (this.unflushed >= FLUSH_EVERY) {
      this.unflushed = 0;
      this.flushing = this.flushing.then(() => this.handle.datasync());
      // Met in _flush; until then it must not count as unhandled.
      this.flushing.catch(() => undefined);
    }
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    this.flushing.then(() => done(), done);
  }
}

/**
 * Opens a file to write `source` into: if it cannot be opened, the source is destroyed, as a pipeline
 * whose file stream failed to open destroys it (a request body then lets its connection go).
 */
export async function openFor(source: Readable, file: string, flags: 'wx' | 'r+'): Promise<FileHandle> {
  try {
    return await fs.open(file, flags);
  } catch (err) {
    source.destroy();
    throw err;
  }
}
