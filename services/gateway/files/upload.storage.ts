import { createHash } from 'node:crypto';
import { createWriteStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Request } from 'express';
import type { StorageEngine } from 'multer';
import { newId } from '../../../shared/ids';

/** What the storage engine adds to multer's file object. */
export interface StagedFile {
  path: string;
  size: number;
  sha256: string;
}

export const STAGING_DIR = '.staging';

/**
 * A multer storage engine that streams each part to a uniquely named file in a staging folder under
 * the upload directory (same file system, so the final rename is atomic), hashing as it writes.
 * The staged name is ours; nothing the client sends takes part in a path.
 */
export class StagingStorage implements StorageEngine {
  readonly dir: string;
  /** Staged files of requests still running: how to stop each write, and when it has settled. */
  private readonly inFlight = new Map<string, { abort: () => void; settled: Promise<unknown> }>();
  private closed = false;

  constructor(uploadDir: string) {
    this.dir = path.join(uploadDir, STAGING_DIR);
  }

  _handleFile(req: Request, file: Express.Multer.File, cb: (error?: unknown, info?: Partial<Express.Multer.File>) => void): void {
    if (this.closed) {
      file.stream.resume();
      cb(new Error('the gateway is shutting down'));
      return;
    }
    const target = path.join(this.dir, `${newId()}.part`);
    const hash = createHash('sha256');
    let size = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    const settled = fs
      .mkdir(this.dir, { recursive: true })
      .then(() => pipeline(file.stream, meter, createWriteStream(target, { flags: 'wx' })))
      .then(
        () => cb(null, { path: target, size, sha256: hash.digest('hex') } as Partial<Express.Multer.File>),
        (err: unknown) => fs.rm(target, { force: true }).finally(() => cb(err)),
      );
    this.inFlight.set(target, { abort: () => file.stream.destroy(new Error('the gateway is shutting down')), settled });
    // Once the response is sent, the files service has moved or removed the staged file itself; a
    // request cut short is tracked until its own write has stopped and removed the file.
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
