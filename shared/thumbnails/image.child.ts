import { limitImageThreads, lowerThreads, makeThumbnails, UnreadableImageError } from './thumbnail.maker';

/**
 * The process the worker makes its thumbnails' images in (image.process.ts). Every thread of it runs
 * at nice 19: libvips' threads, and also the libuv threads sharp runs each pipeline on and the main
 * thread, which in the worker itself would stay at the worker's priority (more than a third of an
 * image's CPU). A thread inherits the nice value of the thread that starts it, so lowering the ones
 * there are at start covers those started later; they are lowered again after each image all the same.
 */
function lowerEveryThread(): void {
  lowerThreads(() => true);
}

export interface ImageRequest {
  id: number;
  source: Uint8Array;
  sizes: number[];
}

export type ImageReply = { id: number; images: Array<[number, Uint8Array]> } | { id: number; error: string; unreadable: boolean };

if (process.platform === 'linux') lowerEveryThread();
limitImageThreads();

process.on('message', (request: ImageRequest) => {
  const { id, source, sizes } = request;
  const reply = (message: ImageReply) => process.send?.(message);
  makeThumbnails(Buffer.from(source.buffer, source.byteOffset, source.byteLength), sizes).then(
    (images) => reply({ id, images: [...images] }),
    (err: unknown) => reply({ id, error: err instanceof Error ? err.message : String(err), unreadable: err instanceof UnreadableImageError }),
  ).finally(() => process.platform === 'linux' && lowerEveryThread());
});
// The worker gone (crashed or stopped), nothing is left to answer.
process.on('disconnect', () => process.exit(0));
