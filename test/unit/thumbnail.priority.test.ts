import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import sharp from 'sharp';
import { IMAGE_THREAD_NICE, limitImageThreads, makeThumbnails } from '../../shared/thumbnails/thumbnail.maker';
import { THUMBNAIL_SIZES } from '../../shared/thumbnails/thumbnail.sizes';

/** This process's threads with their names and nice values (Linux keeps one per thread). */
function threads(): Array<{ tid: number; name: string; nice: number }> {
  return readdirSync('/proc/self/task').flatMap((tid) => {
    try {
      return [{ tid: Number(tid), name: readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim(), nice: os.getPriority(Number(tid)) }];
    } catch {
      return [];
    }
  });
}

test('making thumbnails leaves every libvips thread at the lowest priority and the process its own', async () => {
  const own = os.getPriority(process.pid);
  limitImageThreads();
  // Another test in this worker may have lowered the pool's threads already; start from the process's own.
  for (const t of threads()) if (t.name.startsWith('libvips')) os.setPriority(t.tid, own);
  const raw = Buffer.alloc(800 * 600 * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 7 + (i >> 11)) & 255;
  // Encoding the source starts libvips threads at the process's priority.
  const jpeg = await sharp(raw, { raw: { width: 800, height: 600, channels: 3 } }).jpeg().toBuffer();
  expect(threads().some((t) => t.name.startsWith('libvips') && t.nice === own)).toBe(true);

  const images = await makeThumbnails(jpeg);
  expect([...images.keys()]).toEqual([...THUMBNAIL_SIZES]);
  const all = threads();
  const vips = all.filter((t) => t.name.startsWith('libvips'));
  expect(vips.length).toBeGreaterThan(0);
  expect(vips.filter((t) => t.nice !== IMAGE_THREAD_NICE)).toEqual([]);
  expect(all.filter((t) => !t.name.startsWith('libvips') && t.nice !== own)).toEqual([]);
  expect(os.getPriority(process.pid)).toBe(own);
});
