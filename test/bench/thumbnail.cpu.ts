/**
 * CPU of one thumbnail job's image work on a 12-megapixel JPEG (docs/BENCHMARKS.md, "Thumbnails"):
 * decode, the stored sizes, WebP encode, on the one libvips thread a worker gives each job: the sizes
 * made with the upload, those made when first asked for, and all five at once.
 * `npm run build && node dist/test/bench/thumbnail.cpu.js` (ceiling: 300 ms of CPU per job).
 */
import sharp from 'sharp';
import { limitImageThreads, makeThumbnails } from '../../shared/thumbnails/thumbnail.maker';
import { EAGER_THUMBNAIL_SIZES, LARGE_THUMBNAIL_SIZES, THUMBNAIL_SIZES } from '../../shared/thumbnails/thumbnail.sizes';

const CEILING_MS = 300;

/** A 4000x3000 photograph-like JPEG (smooth shapes with grain, quality 90): made here, nothing downloaded. */
async function photo(width = 4000, height = 3000): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  let seed = 7;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const grain = seed >> 27;
      const i = (y * width + x) * 3;
      raw[i] = (128 + 100 * Math.sin(x / 300) * Math.cos(y / 200) + grain) & 255;
      raw[i + 1] = ((x * 255) / width + grain) & 255;
      raw[i + 2] = ((y * 255) / height + 40 * Math.sin((x + y) / 50) + grain) & 255;
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality: 90 }).toBuffer();
}

/** Median and max CPU ms of `runs` calls of `work`, after one to warm up. */
async function cpuOf(work: () => Promise<unknown>, runs = 7): Promise<{ median: number; max: number }> {
  await work();
  const cpu: number[] = [];
  for (let run = 0; run < runs; run++) {
    const before = process.cpuUsage();
    await work();
    const used = process.cpuUsage(before);
    cpu.push((used.user + used.system) / 1000);
  }
  cpu.sort((a, b) => a - b);
  return { median: cpu[Math.floor(cpu.length / 2)]!, max: cpu[cpu.length - 1]! };
}

async function main(): Promise<void> {
  limitImageThreads();
  const source = await photo();
  const mib = (source.length / 1048576).toFixed(1);
  // The job of an upload makes EAGER_THUMBNAIL_SIZES; the larger ones come when first asked for.
  const cases = [
    ['with the upload', EAGER_THUMBNAIL_SIZES],
    ['when first asked for', LARGE_THUMBNAIL_SIZES],
    ['all at once', THUMBNAIL_SIZES],
  ] as const;
  for (const [when, sizes] of cases) {
    const { median, max } = await cpuOf(() => makeThumbnails(source, sizes));
    console.log(`12-megapixel JPEG (${mib} MiB) -> WebP ${sizes.join(', ')} (${when}): median ${median.toFixed(0)} ms CPU, max ${max.toFixed(0)} ms (ceiling ${CEILING_MS} ms) ${median <= CEILING_MS ? 'PASS' : 'FAIL'}`);
  }
}

void main();
