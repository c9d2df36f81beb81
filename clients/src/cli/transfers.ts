import { createHash, type Hash } from 'node:crypto';
import { promises as fs, openAsBlob } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { File } from '../../../shared/protocol';
import { ApiError } from '../sdk/errors';
import { STATE_DIR, type Journal, type PendingUpload } from './journal';
import type { Reporter } from './output';
import type { Session } from './session';
import type { StreamedResponse } from '../sdk/node.transport';
import { newId } from './match';
import { assertSafeId } from './local.names';
import { DeltaTransfers, describeDelta, type DeltaNote } from './delta.transfers';
import { FlushBehind } from './flush.behind';
import { BulkTransfers } from './bulk.transfers';

/** Uploads above this size go by tus and resume after a crash. */
export const RESUMABLE_THRESHOLD = 8 * 1024 * 1024;

/** Bytes gathered before one write: a few large writes instead of one per piece the network hands over. */
const WRITE_BATCH = 1024 * 1024;

/** The pieces in one gathered write (no copy into one buffer first), the rest again after a short write. */
async function writeAll(handle: FileHandle, pieces: Buffer[]): Promise<void> {
  let rest = pieces;
  while (rest.length > 0) {
    let n = (await handle.writev(rest)).bytesWritten;
    let i = 0;
    while (i < rest.length && n >= rest[i]!.length) n -= rest[i++]!.length;
    rest = rest.slice(i);
    if (n > 0) rest[0] = rest[0]!.subarray(n);
  }
}

/**
 * A response body into a new file, hashed as it arrives; the bytes are written in batches while
 * the next ones come in, and are on disk (fsync) before it resolves, so that the rename that places
 * them never publishes a file a power cut could leave empty; flushed behind the writes as it grows.
 */
async function receive(res: StreamedResponse, file: string, hash: Hash, progress: (done: number) => void): Promise<void> {
  // The mode of any file created in DIR (the umask's): the state folder is its owner's alone.
  const handle = await fs.open(file, 'wx', 0o666);
  let writing: Promise<void> = Promise.resolve();
  const flushes = new FlushBehind(handle);
  try {
    let batch: Buffer[] = [];
    let batched = 0;
    let done = 0;
    const flush = async () => {
      await writing;
      const out = batch;
      writing = writeAll(handle, out);
      flushes.wrote(batched, writing);
      batch = [];
      batched = 0;
    };
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      hash.update(chunk);
      done += chunk.length;
      progress(done);
      batch.push(chunk);
      batched += chunk.length;
      if (batched >= WRITE_BATCH) await flush();
    }
    if (batched > 0) await flush();
    await writing;
    await flushes.finish();
  } finally {
    // A body not read to its end (a failed write) lets its connection go.
    res.body.destroy();
    await writing.catch(() => undefined);
    await flushes.settled();
    await handle.close();
  }
}

/** A new file changed while its upload ran, before the upload committed: nothing was kept of it. */
export class StillWritingError extends Error {
  constructor() {
    super('the file is still being written');
  }
}

export class Transfers {
  private readonly delta: DeltaTransfers;
  /** Many small files to a request, both ways. */
  readonly bulk: BulkTransfers;
  /** What whole downloads still do once their bytes are placed; the pass waits for it at its end (`settle`). */
  private readonly after: Promise<void>[] = [];
  /** What the last delta transfer of each file moved, until its action line is written. */
  private readonly notes = new Map<string, DeltaNote>();

  constructor(
    private readonly dir: string,
    private readonly session: Session,
    private readonly journal: Journal,
    private readonly reporter: Reporter,
    private readonly signal: AbortSignal,
  ) {
    this.delta = new DeltaTransfers(session, journal, signal);
    this.bulk = new BulkTransfers(dir, session, signal);
  }

  /** Waits for what the downloads of the pass left to do after their bytes were placed. */
  async settle(): Promise<void> {
    await Promise.all(this.after.splice(0));
  }

  /** The SHA-256 of a large local file, cut into chunks in the same read for a delta upload. */
  readLarge(full: string, base?: { id: string; sha256: string; sameStat: boolean }): Promise<string> {
    return this.delta.read(full, base);
  }

  /** ` (delta: ...)` for the action line of a file that travelled as changes, else empty. */
  deltaNote(id: string): string {
    const note = this.notes.get(id);
    this.notes.delete(id);
    return describeDelta(note);
  }

  /**
   * Downloads a file's content into `.filesync/tmp/` and answers the temporary path, the digest of
   * what arrived and the one it must have, which the caller compares before renaming it into place:
   * the gateway's `Repr-Digest` (or its ETag, the content's SHA-256), else the SHA-256 the change feed
   * announced (a content served from the store on another origin carries the store's ETag, not it).
   */
  async download(
    id: string,
    label: string,
    size: number,
    announced: string,
    /** The content this device holds for the file (its path and SHA-256), from which a delta download copies. */
    local?: { path: string; sha256: string },
  ): Promise<{ tmp: string; sha256: string; expected: string; modeSet?: boolean }> {
    assertSafeId(id);
    const tmp = join(this.dir, STATE_DIR, 'tmp', `${id}-${newId().slice(0, 8)}`);
    if (local) {
      const bar = this.reporter.progress(label, size);
      try {
        const got = await this.delta.download({ id, size, basePath: local.path, baseSha256: local.sha256 }, tmp, (done) => bar.update(done));
        if (got) {
          this.notes.set(id, got.note);
          return { tmp, sha256: got.sha256, expected: got.expected };
        }
      } finally {
        bar.done();
      }
    }
    const res = await this.session.authed(() => this.session.client.downloadStream(id, { signal: this.signal }));
    const expected = this.session.client.announcedDigest(res) ?? announced;
    const hash = createHash('sha256');
    const bar = this.reporter.progress(label, size);
    try {
      await receive(res, tmp, hash, (done) => bar.update(done));
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    } finally {
      bar.done();
    }
    const sha256 = hash.digest('hex');
    // The chunk list kept for the next delta is fetched beside the placing of these bytes, not before it.
    if (sha256 === expected) this.after.push(this.delta.receivedWhole(id, sha256, size).catch(() => undefined));
    return { tmp, sha256, expected, modeSet: true };
  }

  /**
   * A new file with its content: `POST /files` with its id, or tus above the threshold. The bytes are
   * read once, by the upload: the File answered carries the digest of what the service received. A
   * resumable upload is found again by the file's size and mtime, which a change of its bytes moves.
   */
  async uploadNew(input: { id: string; diskPath: string; path: string; name: string; folderId: string; size: number; mtimeMs: number; settled: Promise<boolean> }): Promise<File> {
    const full = join(this.dir, input.diskPath);
    if (input.size > RESUMABLE_THRESHOLD) {
      const fingerprint = `size ${input.size} mtime ${input.mtimeMs}`;
      const pending = this.journal.upload(input.id, input.path, fingerprint);
      const id = pending?.id ?? input.id;
      // Streamed while the file is watched; stopped as soon as it moves, or held before its commit until it has held still.
      const moved = new AbortController();
      void input.settled.then((stayed) => stayed || moved.abort());
      const stayed = async () => {
        if (!(await input.settled)) throw new StillWritingError();
      };
      try {
        const file = await this.resumable(full, input.path, input.size, fingerprint, { name: input.name, folderId: input.folderId || undefined, id }, id, pending?.url, undefined, { beforeCommit: stayed, stop: moved.signal });
        if (file.sha256) this.delta.sentWhole(full, file.sha256);
        return file;
      } catch (err) {
        if (!moved.signal.aborted || this.signal.aborted) throw err;
        // Ended on the service: its bytes and the quota they held go now, not when it expires.
        await this.terminate(this.journal.uploadOf(id));
        throw new StillWritingError();
      }
    }
    if (!(await input.settled)) throw new StillWritingError();
    const content = await openAsBlob(full);
    const file = await this.session.authed(() =>
      this.session.client.uploadFile({ content, name: input.name, folderId: input.folderId || undefined, id: input.id, signal: this.signal }),
    );
    if (file.sha256) this.delta.sentWhole(full, file.sha256);
    return file;
  }

  /** New content for a known file, on the condition that the service still holds `ifMatch`. */
  async uploadEdit(input: { id: string; diskPath: string; path: string; sha256: string; size: number; ifMatch: string }): Promise<File> {
    const full = join(this.dir, input.diskPath);
    const delta = await this.delta.upload({ id: input.id, full, sha256: input.sha256, size: input.size, ifMatch: input.ifMatch });
    if (delta) {
      this.notes.set(input.id, delta.note);
      return delta.file;
    }
    if (input.size > RESUMABLE_THRESHOLD) {
      const pending = this.journal.upload(input.id, input.path, input.sha256);
      const file = await this.resumable(full, input.path, input.size, input.sha256, { fileId: input.id, sha256: input.sha256 }, input.id, pending?.url, input.ifMatch || undefined);
      if (file.sha256) this.delta.sentWhole(full, file.sha256);
      return file;
    }
    const content = await openAsBlob(full);
    const file = await this.session.authed(() =>
      this.session.client.replaceContent(input.id, input.ifMatch ? { content, ifMatch: input.ifMatch, sha256: input.sha256, signal: this.signal } : { content, ifNoneMatch: true, sha256: input.sha256, signal: this.signal }),
    );
    if (file.sha256) this.delta.sentWhole(full, file.sha256);
    return file;
  }

  private async resumable(
    full: string,
    path: string,
    size: number,
    /** What the journal keys the upload by: the content's digest, or a fingerprint of the file. */
    key: string,
    metadata: { name?: string; folderId?: string; id?: string; fileId?: string; sha256?: string },
    id: string,
    uploadUrl: string | undefined,
    ifMatch?: string,
    /** `beforeCommit` for the SDK; `stop` ends the upload where it is (the caller ends it on the service). */
    hold?: { beforeCommit: () => Promise<void>; stop: AbortSignal },
  ): Promise<File> {
    // An upload this resource had for other bytes is ended first: the journal keeps one per resource.
    if (!uploadUrl) await this.terminate(this.journal.uploadOf(id));
    const bar = this.reporter.progress(path, size);
    const run = (url: string | undefined) =>
      this.session.client.uploadResumable({
        path: full,
        size,
        metadata,
        ifMatch,
        uploadUrl: url,
        beforeCommit: hold?.beforeCommit,
        signal: hold ? AbortSignal.any([this.signal, hold.stop]) : this.signal,
        onUploadUrl: (u) => this.journal.putUpload({ id, path, sha256: key, url: u }),
        onProgress: (sent) => bar.update(sent),
      });
    try {
      const file = await this.session.authed(() => run(uploadUrl)).catch((err) => {
        // An upload that expired or was removed is started again from its first byte.
        if (uploadUrl && err instanceof ApiError && (err.status === 404 || err.status === 410)) return run(undefined);
        throw err;
      });
      this.journal.dropUpload(id);
      return file;
    } catch (err) {
      // Ended on the service, or refused by it for good.
      if (err instanceof StillWritingError || (err instanceof ApiError && err.status !== 429 && err.status < 500)) this.journal.dropUpload(id);
      throw err;
    } finally {
      bar.done();
    }
  }

  /** Ends an abandoned upload on the service (its bytes and reserved quota go) and forgets it. */
  private async terminate(upload: PendingUpload | undefined): Promise<void> {
    if (!upload) return;
    try {
      await this.session.authed(() => this.session.client.terminateUpload(upload.url, this.signal));
    } catch {
      /* it expires on the service */
    }
    this.journal.dropUpload(upload.id);
  }
}
