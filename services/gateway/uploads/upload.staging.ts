import { PassThrough, type Readable } from 'node:stream';
import type { Request } from 'express';
import type { StorageEngine } from 'multer';
import { AppError } from '../../../shared/errors';
import { STAGING_PREFIX, type ContentStore, type StagedContent } from '../../../shared/storage/content.store';

/** The staging folder of the local store, for tests and operators who look at UPLOAD_DIR. */
export const STAGING_DIR = STAGING_PREFIX.slice(0, -1);

/**
 * Where uploads land first: the content store's staging, hashed as they are written. It is multer's
 * storage engine for POST /files and stages the raw body of PUT content. The staging key is the
 * store's; nothing the client sends takes part in it. It also knows which uploads are still being
 * received, so that a gateway stopping leaves none of their bytes behind.
 */
export class UploadStaging implements StorageEngine {
  /** Stagings of requests still running: how to stop each write, and what it staged once settled. */
  private readonly inFlight = new Set<{ abort: () => void; settled: Promise<StagedContent | undefined> }>();
  private closed = false;

  constructor(private readonly store: ContentStore) {}

  _handleFile(req: Request, file: Express.Multer.File, cb: (error?: unknown, info?: Partial<Express.Multer.File>) => void): void {
    if (this.closed) {
      file.stream.resume();
      cb(new Error('the gateway is shutting down'));
      return;
    }
    // busboy enforces the size limit on this stream itself.
    const staging = this.store.stage(file.stream, { maxBytes: Number.POSITIVE_INFINITY });
    staging.then(
      (staged) => cb(null, staged as unknown as Partial<Express.Multer.File>),
      (err: unknown) => cb(err),
    );
    this.track(req, () => file.stream.destroy(new Error('the gateway is shutting down')), staging);
  }

  /**
   * Remembers a staging while its request runs. Once the response is sent, the service has placed or
   * discarded the bytes itself; a request cut short is tracked until its own write has stopped.
   */
  private track(req: Request, abort: () => void, staging: Promise<StagedContent>): void {
    const entry = { abort, settled: staging.catch(() => undefined) };
    this.inFlight.add(entry);
    const forget = () => this.inFlight.delete(entry);
    if (req.res) {
      req.res.once('finish', forget);
      req.res.once('close', () => void entry.settled.finally(forget));
    } else {
      void entry.settled.finally(forget);
    }
  }

  /**
   * At shutdown, after the server has stopped serving: stops the writes of uploads that did not
   * finish and discards what they staged, so none outlives the process. Returns how many uploads it
   * stopped.
   */
  async removeInFlight(): Promise<number> {
    this.closed = true;
    const entries = [...this.inFlight];
    this.inFlight.clear();
    await Promise.all(
      entries.map(async (entry) => {
        entry.abort();
        const staged = await entry.settled;
        if (staged) await this.store.discard(staged);
      }),
    );
    return entries.length;
  }

  _removeFile(_req: Request, file: Express.Multer.File, cb: (error: Error | null) => void): void {
    this.discard(file as unknown as StagedContent).then(
      () => cb(null),
      (err: Error) => cb(err),
    );
  }

  /**
   * Streams a raw body (PUT content) to staging while hashing it. More than `maxBytes` stops the
   * transfer at once with FILE_TOO_LARGE; on any failure nothing stays staged.
   */
  async stage(source: Request, maxBytes: number): Promise<StagedContent> {
    if (this.closed) throw new AppError('SERVICE_UNAVAILABLE', 'the gateway is shutting down');
    // The request is piped into the store's pipeline rather than put in it: a pipeline would destroy
    // it on failure, and with it the socket the 413 has to be answered on.
    const body = new PassThrough({ highWaterMark: 1024 * 1024 });
    let ended = false;
    const onEnd = () => (ended = true);
    const onError = (err: Error) => body.destroy(err);
    const onClose = () => {
      if (!ended) body.destroy(new AppError('INVALID_REQUEST', 'the request body was cut short'));
    };
    source.on('end', onEnd).on('error', onError).on('close', onClose);
    try {
      const staging = this.store.stage(body as Readable, { maxBytes });
      this.track(source, () => body.destroy(new Error('the gateway is shutting down')), staging);
      source.pipe(body);
      return await staging;
    } catch (err) {
      source.unpipe(body);
      throw err;
    } finally {
      source.off('end', onEnd).off('error', onError).off('close', onClose);
    }
  }

  /** Drops staged bytes a request will not use (its fields were refused). */
  async discard(staged: StagedContent): Promise<void> {
    await this.store.discard(staged);
  }

  /** Removes staged bytes left by a crash; only old ones, since other gateways may share the store. */
  sweep(olderThanMs: number): Promise<number> {
    return this.store.sweepStaging(olderThanMs);
  }
}
