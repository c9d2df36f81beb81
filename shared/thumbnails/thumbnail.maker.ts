import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import sharp, { type OutputInfo } from 'sharp';
import { MAX_THUMBNAIL_SIZE, THUMBNAIL_SIZES } from './thumbnail.sizes';

/**
 * Decompression bombs stop here: an image declaring more pixels than this is unreadable to us (a
 * 100-megapixel photograph decodes in well under a second; libvips' own limit is 268 megapixels).
 */
const MAX_INPUT_PIXELS = 100_000_000;

/**
 * WebP at quality 75 looks like the original at these sizes; effort 2 (of 0..6) costs about half of
 * the default's CPU for files a few percent larger (docs/BENCHMARKS.md, "Thumbnails").
 */
const WEBP = { quality: 75, effort: 2 } as const;

/** The content is not an image the library can decode (corrupt, truncated, too many pixels, unknown format). */
export class UnreadableImageError extends Error {
  constructor(cause: unknown) {
    super(`unreadable image: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

/**
 * One image's thumbnails at `sizes` (by default every size of THUMBNAIL_SIZES), as WebP. The source
 * is decoded once, at most the largest of `sizes` on its longer side (JPEG and WebP shrink while
 * decoding, so a 12-megapixel photo is never held whole), turned upright by its EXIF orientation;
 * each size is resized from that. Never enlarged: an image smaller than a size is stored at its own
 * size. The first frame of an animation is the picture.
 */
export async function makeThumbnails(source: Buffer, sizes: readonly number[] = THUMBNAIL_SIZES): Promise<Map<number, Buffer>> {
  lowerImageThreadPriority();
  const largest = Math.min(MAX_THUMBNAIL_SIZE, Math.max(...sizes));
  let decoded: { data: Buffer; info: OutputInfo };
  try {
    decoded = await sharp(source, { failOn: 'error', limitInputPixels: MAX_INPUT_PIXELS })
      .rotate()
      .resize(largest, largest, { fit: 'inside', withoutEnlargement: true })
      .raw()
      .toBuffer({ resolveWithObject: true });
  } catch (err) {
    throw new UnreadableImageError(err);
  }
  const { data, info } = decoded;
  const raw = { raw: { width: info.width, height: info.height, channels: info.channels } };
  const images = new Map<number, Buffer>();
  for (const size of sizes) {
    // The decode is that size already: encoded as it is, without a resize that would change nothing.
    const image = size >= Math.max(info.width, info.height) ? sharp(data, raw) : sharp(data, raw).resize(size, size, { fit: 'inside' });
    images.set(size, await image.webp(WEBP).toBuffer());
  }
  lowerImageThreadPriority();
  return images;
}

/**
 * libvips threads per image. A worker makes one thumbnail per job slot on one core, so a burst of
 * uploaded photos cannot take the cores the uploads and the sync batches run on.
 */
export function limitImageThreads(threads = 1): void {
  sharp.concurrency(threads);
  // The operation cache helps a process that reworks the same images; each content here is decoded once.
  sharp.cache(false);
}

/** The lowest priority a thread can have (nice 19). */
export const IMAGE_THREAD_NICE = 19;

/**
 * Linux keeps a nice value per thread, so libvips' threads (named "libvips worker", where nearly all
 * of a thumbnail's CPU goes) are set to nice 19 while the worker's own threads keep theirs: uploads,
 * sync batches and the database get the cores first, and thumbnails take what is left. libvips
 * starts threads as it needs them, so this runs before and after each image; a thread already
 * lowered is left alone. Elsewhere, or without /proc, images run at the process's priority.
 */
export function lowerImageThreadPriority(): void {
  // A thread starts at the nice value of the thread that starts it: where this one runs at the lowest
  // priority already (the background process lowers all of its threads at start), so do the others.
  if (process.platform === 'linux' && os.getPriority() < IMAGE_THREAD_NICE) lowerThreads((tid) => readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').startsWith('libvips'));
}

/** Sets the threads of this process that `which` picks (by Linux thread id) to IMAGE_THREAD_NICE. */
export function lowerThreads(which: (tid: string) => boolean): void {
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return;
  }
  for (const tid of tids) {
    try {
      if (!which(tid)) continue;
      if (os.getPriority(Number(tid)) < IMAGE_THREAD_NICE) os.setPriority(Number(tid), IMAGE_THREAD_NICE);
    } catch {
      // The thread ended in between.
    }
  }
}
