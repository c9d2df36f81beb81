import { UnrecoverableError } from 'bullmq';
import type { ThumbnailJobData, ThumbnailJobResult } from '../queue/thumbnail.contract';
import { ContentNotFoundError, type ContentStore } from '../storage/content.store';
import { makeThumbnails, UnreadableImageError } from './thumbnail.maker';
import type { ThumbnailRepository } from './thumbnail.repository';
import { EAGER_THUMBNAIL_SIZES, LARGE_THUMBNAIL_SIZES, thumbnailKey } from './thumbnail.sizes';

/** Larger contents are not decoded (the whole file is read into memory first): they get no thumbnail. */
export const MAX_THUMBNAIL_SOURCE_BYTES = 64 * 1024 * 1024;

const TOO_LARGE = Symbol('too large');

const result = (r: Partial<ThumbnailJobResult>): ThumbnailJobResult => ({ made: 0, skipped: 0, unreadable: 0, gone: 0, ...r });

/**
 * What one thumbnail job does, on the worker. The row goes to 'making' before any image is written,
 * so a crash part-way leaves a row the sweep (thumbnail.sweeper.ts) sees; it goes to 'ready' only
 * once every size of EAGER_THUMBNAIL_SIZES is stored. The large sizes come later, by a job of their
 * own, on a row already 'ready': the sweep removes every size with the row. Images are written over
 * whatever a crashed run left under their keys: a key only ever holds a thumbnail of that digest, and
 * both drivers replace an object whole. Thumbnails are not anyone's files: no quota, no change feed,
 * no version.
 */
export class ThumbnailMaking {
  constructor(
    private readonly store: ContentStore,
    private readonly thumbnails: ThumbnailRepository,
    /** Where the images are made: in this process, or another at the lowest priority (image.process.ts). */
    private readonly makeImages: (source: Buffer, sizes: readonly number[]) => Promise<Map<number, Buffer>> = makeThumbnails,
  ) {}

  async run(data: ThumbnailJobData): Promise<ThumbnailJobResult> {
    if (data.part === 'large') return this.runLarge(data);
    const { sha256 } = data;
    const state = await this.thumbnails.state(sha256);
    if (state === 'unreadable') return result({ skipped: 1 });
    if (state === 'ready' && (await this.allStored(sha256, EAGER_THUMBNAIL_SIZES))) return result({ skipped: 1 });
    await this.thumbnails.set(sha256, 'making');
    const images = await this.make(data, EAGER_THUMBNAIL_SIZES);
    if (!images) return result({ gone: 1 });
    await this.put(sha256, images);
    await this.thumbnails.set(sha256, 'ready');
    return result({ made: 1 });
  }

  /**
   * The sizes made when first asked for, once the others are. Made for a row the sweep removed
   * meanwhile, they are removed again here, since no row is left to remove them by.
   */
  private async runLarge(data: ThumbnailJobData): Promise<ThumbnailJobResult> {
    const { sha256 } = data;
    if ((await this.thumbnails.state(sha256)) !== 'ready' || (await this.allStored(sha256, LARGE_THUMBNAIL_SIZES))) return result({ skipped: 1 });
    const images = await this.make(data, LARGE_THUMBNAIL_SIZES);
    if (!images) return result({ gone: 1 });
    await this.put(sha256, images);
    if ((await this.thumbnails.state(sha256)) !== 'ready') {
      for (const size of images.keys()) await this.store.remove(thumbnailKey(sha256, size));
      return result({ gone: 1 });
    }
    return result({ made: 1 });
  }

  /** The images, or undefined when the content is gone; an unreadable one is recorded and fails the job for good. */
  private async make(data: ThumbnailJobData, sizes: readonly number[]): Promise<Map<number, Buffer> | undefined> {
    const source = await this.read(data);
    if (!source) return undefined;
    try {
      if (source === TOO_LARGE) throw new UnreadableImageError(`over ${MAX_THUMBNAIL_SOURCE_BYTES} bytes`);
      return await this.makeImages(source, sizes);
    } catch (err) {
      if (!(err instanceof UnreadableImageError)) throw err;
      await this.thumbnails.set(data.sha256, 'unreadable');
      // Decoding again would fail again: the job fails once, visibly, and is not retried.
      throw new UnrecoverableError(err.message);
    }
  }

  /** Each image in one write: bytes made here need neither the upload's hashing nor its staging. */
  private async put(sha256: string, images: Map<number, Buffer>): Promise<void> {
    await Promise.all([...images].map(([size, image]) => this.store.write(thumbnailKey(sha256, size), image)));
  }

  private async allStored(sha256: string, sizes: readonly number[]): Promise<boolean> {
    const stats = await Promise.all(sizes.map((size) => this.store.stat(thumbnailKey(sha256, size))));
    return stats.every((s) => s !== undefined);
  }

  /** The content's bytes, from the key the job names or, when that was replaced meanwhile, any key with the same digest. */
  private async read(data: ThumbnailJobData): Promise<Buffer | typeof TOO_LARGE | undefined> {
    const tried = new Set<string>();
    let key: string | undefined = data.storageKey;
    while (key && !tried.has(key)) {
      tried.add(key);
      try {
        const handle = await this.store.open(key);
        if (handle.size > MAX_THUMBNAIL_SOURCE_BYTES) {
          await handle.close();
          return TOO_LARGE;
        }
        const chunks: Buffer[] = [];
        for await (const chunk of await handle.read()) chunks.push(chunk as Buffer);
        return Buffer.concat(chunks);
      } catch (err) {
        if (!(err instanceof ContentNotFoundError)) throw err;
      }
      key = await this.thumbnails.someKey(data.sha256);
    }
    return undefined;
  }
}
