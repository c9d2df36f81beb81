/**
 * The sizes stored for each image, in pixels on the longer side. A request for `size` is answered
 * with the largest stored size not above it, so the image never exceeds what was asked for, and the
 * whole range 64..1024 is served by five stored images.
 */
export const THUMBNAIL_SIZES = [64, 128, 256, 512, 1024] as const;

/**
 * Made as soon as an image is uploaded, from one decode shrunk while loading: the grid's 256 and
 * below, about a quarter of the CPU of all five for a photograph (docs/BENCHMARKS.md, "Thumbnails").
 */
export const EAGER_THUMBNAIL_SIZES = [64, 128, 256] as const;
/** Made when first asked for (few pictures are ever opened large); until then the 256 answers. */
export const LARGE_THUMBNAIL_SIZES = [512, 1024] as const;
export const LARGEST_EAGER_SIZE = 256;

export const isLargeSize = (stored: number): boolean => stored > LARGEST_EAGER_SIZE;
export const MIN_THUMBNAIL_SIZE = 64;
export const MAX_THUMBNAIL_SIZE = 1024;
export const DEFAULT_THUMBNAIL_SIZE = 256;

/** The largest stored size not above `size` (which is within 64..1024). */
export function storedSizeFor(size: number): number {
  let chosen: number = THUMBNAIL_SIZES[0];
  for (const s of THUMBNAIL_SIZES) if (s <= size) chosen = s;
  return chosen;
}

/** The store key of one size of the thumbnails of a content: built from a hex digest and a number only. */
export function thumbnailKey(sha256: string, size: number): string {
  return `thumbs/${sha256}-${size}.webp`;
}

export const THUMBNAIL_KEY_PREFIX = 'thumbs/';

export const isThumbnailKey = (key: string): boolean => key.startsWith(THUMBNAIL_KEY_PREFIX);

/** Media types whose content the workers try to thumbnail (HEIC only where the library reads it). */
const SOURCE_TYPES = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/avif', 'image/heic', 'image/heif']);

export const isThumbnailSource = (mimeType: string | null | undefined): boolean => !!mimeType && SOURCE_TYPES.has(mimeType.toLowerCase());
