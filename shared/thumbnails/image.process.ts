import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ImageReply, ImageRequest } from './image.child';
import { UnreadableImageError } from './thumbnail.maker';

type Pending = { resolve: (images: Map<number, Buffer>) => void; reject: (err: Error) => void };

/**
 * Makes thumbnails' images in a process of their own whose every thread runs at nice 19
 * (image.child.ts), started on first use and again after it ended. The worker keeps only the job's
 * queue, database and store calls. A crash of that process fails the images being made (their jobs
 * are retried); an image it cannot read is an UnreadableImageError, as in the worker.
 */
export class ImageProcess {
  private child: ChildProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  private next = 0;

  private constructor(private readonly file: string) {}

  /** Undefined where the child's compiled file is absent (the sources run under ts-jest): images are then made in the worker. */
  static create(): ImageProcess | undefined {
    const file = path.join(__dirname, 'image.child.js');
    return existsSync(file) ? new ImageProcess(file) : undefined;
  }

  make(source: Buffer, sizes: readonly number[]): Promise<Map<number, Buffer>> {
    const child = (this.child ??= this.start());
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      child.channel?.ref();
      const request: ImageRequest = { id, source, sizes: [...sizes] };
      child.send(request, (err) => {
        if (err) this.settle(id, (p) => p.reject(err));
      });
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill();
    });
  }

  private start(): ChildProcess {
    const child = fork(this.file, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', (reply: ImageReply) =>
      this.settle(reply.id, (p) => {
        if ('images' in reply) p.resolve(new Map(reply.images.map(([size, image]) => [size, Buffer.from(image.buffer, image.byteOffset, image.byteLength)])));
        else p.reject(reply.unreadable ? new UnreadableImageError(reply.error.replace(/^unreadable image: /, '')) : new Error(reply.error));
      }),
    );
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      const err = new Error(`the image process ended (${signal ?? code})`);
      for (const id of [...this.pending.keys()]) this.settle(id, (p) => p.reject(err));
    });
    // Idle, it keeps no one waiting: the worker may exit without closing it first (it then exits too).
    child.unref();
    child.channel?.unref();
    return child;
  }

  private settle(id: number, how: (p: Pending) => void): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    if (this.pending.size === 0) this.child?.channel?.unref();
    how(pending);
  }
}
