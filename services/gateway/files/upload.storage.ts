import { createHash } from 'node:crypto';
import { createWriteStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Request } from 'express';
import type { StorageEngine } from 'multer';
import { AppError } from '../../../shared/errors';
import { newId } from '../../../shared/ids';

/** What the storage engine adds to multer's file object. */
export interface StagedFile {
  path: string;
  size: number;
  sha256: string;
}

export const STAGING_DIR = '.staging';

/**
 * Size of the writes to the staged file. Node's stock 16 KiB makes a write per network chunk; 1 MiB
 * lets the stream gather the chunks that arrive while a write is under way into one writev call
 * (the transfer bench measured about 15% more throughput). The chunks are not copied.
 */
const WRITE_BATCH = 1024 * 1024;

/** Counts and hashes what passes; more than `maxBytes` fails with FILE_TOO_LARGE. */
function meter(maxBytes: number) {
  const hash = createHash('sha256');
  let size = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      if (size > maxBytes) return done(new AppError('FILE_TOO_LARGE', 'the content is larger than the upload limit'));
      // Hashed here, on the event loop, while libuv's threads write the previous chunks. A hashing
      // thread was measured too and was slower on two cores (docs/BENCHMARKS.md).
      hash.update(chunk);
      done(null, chunk);
    },
  });
  return { stream, result: (file: string): StagedFile => ({ path: file, size, sha256: hash.digest('hex') }) };
}

const stagedWriter = (file: string) => createWriteStream(file, { flags: 'wx', highWaterMark: WRITE_BATCH });

/**
 * Where uploads land first: uniquely named files in a staging folder under the upload directory
 * (same file system, so the final rename is atomic), hashed as they are written. It is multer's
 * storage engine for POST /files and stages the raw body of PUT content. The staged name is ours;
 * nothing the client sends takes part in a path.
 */
export class StagingStorage implements StorageEngine {
  readonly dir: string;
  /** Staged files of requests still running: how to stop each write, and when it has settled. */
  private readonly inFlight = new Map<string, { abort: () => void; settled: Promise<unknown> }>();
  private closed = false;

  constructor(uploadDir: string) {
    this.dir = path.join(uploadDir, STAGING_DIR);
  }

  private newTarget(): string {
    return path.join(this.dir, `${newId()}.part`);
  }

  _handleFile(req: Request, file: Express.Multer.File, cb: (error?: unknown, info?: Partial<Express.Multer.File>) => void): void {
    if (this.closed) {
      file.stream.resume();
      cb(new Error('the gateway is shutting down'));
      return;
    }
    const target = this.newTarget();
    // busboy enforces the size limit on this stream itself.
    const measured = meter(Number.POSITIVE_INFINITY);
    const settled = fs
      .mkdir(this.dir, { recursive: true })
      .then(() => pipeline(file.stream, measured.stream, stagedWriter(target)))
      .then(
        () => cb(null, measured.result(target) as Partial<Express.Multer.File>),
        (err: unknown) => fs.rm(target, { force: true }).finally(() => cb(err)),
      );
    this.track(req, target, () => file.stream.destroy(new Error('the gateway is shutting down')), settled);
  }

  /**
   * Remembers a staged file while its request runs. Once the response is sent, the service has moved
   * or removed the file itself; a request cut short is tracked until its own write has stopped and
   * removed the file.
   */
  private track(req: Request, target: string, abort: () => void, settled: Promise<unknown>): void {
    this.inFlight.set(target, { abort, settled });
    const forget = () => this.inFlight.delete(target);
    if (req.res) {
      req.res.once('finish', forget);
      req.res.once('close', () => void settled.finally(forget));
    } else {
      void settled.finally(forget);
    }
  }

  /**
   * At shutdown, after the server has stopped serving: stops the writes of uploads that did not
   * finish and removes their staging files, so none outlives the process. Returns how many uploads
   * it stopped.
   */
  async removeInFlight(): Promise<number> {
    this.closed = true;
    const entries = [...this.inFlight.entries()];
    this.inFlight.clear();
    await Promise.all(
      entries.map(async ([file, entry]) => {
        entry.abort();
        await entry.settled.catch(() => undefined);
        await fs.rm(file, { force: true });
      }),
    );
    return entries.length;
  }

  _removeFile(_req: Request, file: Express.Multer.File, cb: (error: Error | null) => void): void {
    fs.rm(file.path, { force: true }).then(
      () => cb(null),
      (err: Error) => cb(err),
    );
  }

  /**
   * Streams a raw body (PUT content) to a new staged file while hashing it. More than `maxBytes`
   * stops the transfer at once with FILE_TOO_LARGE; on any failure the partial file is removed.
   */
  async stage(source: Request, maxBytes: number): Promise<StagedFile> {
    if (this.closed) throw new AppError('SERVICE_UNAVAILABLE', 'the gateway is shutting down');
    const target = this.newTarget();
    const measured = meter(maxBytes);
    // The request is piped rather than put in the pipeline: a pipeline would destroy it on failure,
    // and with it the socket the 413 has to be answered on.
    let ended = false;
    const onEnd = () => (ended = true);
    const onError = (err: Error) => measured.stream.destroy(err);
    const onClose = () => {
      if (!ended) measured.stream.destroy(new AppError('INVALID_REQUEST', 'the request body was cut short'));
    };
    source.on('end', onEnd).on('error', onError).on('close', onClose);
    try {
      await fs.mkdir(this.dir, { recursive: true });
      const written = pipeline(measured.stream, stagedWriter(target));
      this.track(source, target, () => measured.stream.destroy(new Error('the gateway is shutting down')), written.catch(() => undefined));
      source.pipe(measured.stream);
      await written;
      return measured.result(target);
    } catch (err) {
      source.unpipe(measured.stream);
      await fs.rm(target, { force: true });
      throw err;
    } finally {
      source.off('end', onEnd).off('error', onError).off('close', onClose);
    }
  }

  async removeStaged(file: string): Promise<void> {
    this.inFlight.delete(file);
    await fs.rm(file, { force: true });
  }

  /** Removes staged files left by a crash; only old ones, since other gateways may share the folder. */
  async sweep(olderThanMs: number): Promise<number> {
    let removed = 0;
    const entries = await fs.readdir(this.dir).catch(() => [] as string[]);
    for (const name of entries) {
      const full = path.join(this.dir, name);
      const stat = await fs.stat(full).catch(() => undefined);
      if (stat && Date.now() - stat.mtimeMs > olderThanMs) {
        await fs.rm(full, { force: true });
        removed++;
      }
    }
    return removed;
  }
}
