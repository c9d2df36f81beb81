import sharp from 'sharp';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Api } from '../support/client';
import { startStack, type TestStack } from '../support/stack';
import { bullPrefix, connectRedis } from '../../shared/redis/redis.connection';
import { THUMBNAIL_QUEUE, thumbnailJobId } from '../../shared/queue/thumbnail.contract';
import { ThumbnailRepository } from '../../shared/thumbnails/thumbnail.repository';
import { ThumbnailSweeper } from '../../shared/thumbnails/thumbnail.sweeper';
import { THUMBNAIL_SIZES, thumbnailKey } from '../../shared/thumbnails/thumbnail.sizes';
import { createContentStore } from '../../shared/storage/store.factory';
import type { ContentStore } from '../../shared/storage/content.store';
import { waitFor } from '../support/fixtures';

/** A picture made here: a gradient, so its encodings are not trivially small. */
async function picture(format: 'jpeg' | 'png', width: number, height: number): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < raw.length; i += 3) {
    const x = (i / 3) % width;
    raw[i] = (x * 255) / width;
    raw[i + 1] = 128;
    raw[i + 2] = 255 - raw[i];
  }
  const image = sharp(raw, { raw: { width, height, channels: 3 } });
  return format === 'jpeg' ? image.jpeg().toBuffer() : image.png().toBuffer();
}

describe.each(['local', 's3'] as const)('thumbnails on the %s driver', (driver) => {
  let stack: TestStack;
  let api: Api;
  let store: ContentStore;
  let thumbnails: ThumbnailRepository;

  beforeAll(async () => {
    stack = await startStack({ STORAGE_DRIVER: driver });
    ({ api } = await stack.admin.createUser('painter'));
    store = createContentStore(stack.env.config);
    thumbnails = new ThumbnailRepository(stack.env.db);
  });

  afterAll(async () => {
    await stack?.close();
  });

  const thumbnail = (id: string, query = '', headers: Record<string, string> = {}) =>
    fetch(`${api.baseUrl}/v1/files/${id}/thumbnail${query}`, { headers: { authorization: `Bearer ${api.token}`, ...headers } });

  /** Polls until the workers made the thumbnail (or gave up on it). */
  const settled = async (id: string, query = '') => {
    let res!: Response;
    const made = await waitFor(async () => {
      res = await thumbnail(id, query);
      return res.status === 200;
    }, 20_000, 100);
    expect(made).toBe(true);
    return res;
  };

  const upload = async (name: string, content: Buffer) => {
    const res = await api.upload({}, { name, content });
    expect(res.status).toBe(201);
    return res.body as { id: string; sha256: string };
  };

  test('an uploaded JPEG gets thumbnails no larger than the size asked for, served as WebP with its validators', async () => {
    const file = await upload('photo.jpg', await picture('jpeg', 1600, 1200));
    const res = await settled(file.id);
    expect(res.headers.get('content-type')).toBe('image/webp');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toMatch(/^private, max-age=\d+$/);
    const etag = res.headers.get('etag')!;
    expect(etag).toContain(file.sha256);
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect(meta.format).toBe('webp');
    expect(Math.max(meta.width!, meta.height!)).toBe(256);

    // Sizes above 256 are made when first asked for; meanwhile the 256 answers, never kept by the browser.
    const first = await thumbnail(file.id, '?size=1024');
    expect(first.status).toBe(200);
    const standIn = Math.max(...(({ width, height }) => [width!, height!])(await sharp(Buffer.from(await first.arrayBuffer())).metadata()));
    expect([256, 1024]).toContain(standIn);
    if (standIn === 256) expect(first.headers.get('cache-control')).toBe('no-store');
    for (const [size, longest] of [['100', 64], ['1024', 1024], ['700', 512]] as const) {
      let seen = 0;
      const made = await waitFor(async () => {
        const sized = await thumbnail(file.id, `?size=${size}`);
        expect(sized.status).toBe(200);
        const m = await sharp(Buffer.from(await sized.arrayBuffer())).metadata();
        seen = Math.max(m.width!, m.height!);
        expect(seen).toBeLessThanOrEqual(Number(size));
        return seen === longest;
      }, 20_000, 100);
      expect([made, seen]).toEqual([true, longest]);
    }
    expect((await thumbnail(file.id, '', { 'if-none-match': etag })).status).toBe(304);
    // Every size is in the store under the digest's keys.
    for (const size of THUMBNAIL_SIZES) expect(await store.stat(thumbnailKey(file.sha256, size))).toBeDefined();
  });

  test('a PNG smaller than a size is not enlarged', async () => {
    const file = await upload('icon.png', await picture('png', 90, 60));
    const res = await settled(file.id, '?size=512');
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect([meta.width, meta.height]).toEqual([90, 60]);
  });

  test('a size outside 64..1024 is a 400; a file of another user, an unknown id or a non-image is a 404', async () => {
    const file = await upload('size-checks.jpg', await picture('jpeg', 300, 200));
    for (const q of ['?size=63', '?size=1025', '?size=abc', '?size=1.5']) expect((await thumbnail(file.id, q)).status).toBe(400);
    const other = (await stack.admin.createUser('onlooker')).api;
    const foreign = await fetch(`${api.baseUrl}/v1/files/${file.id}/thumbnail`, { headers: { authorization: `Bearer ${other.token}` } });
    expect(foreign.status).toBe(404);
    expect((await thumbnail('0'.repeat(32))).status).toBe(404);
    const text = await upload('notes.txt', Buffer.from('not a picture'));
    const res = await thumbnail(text.id);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
    expect(await thumbnails.state(text.sha256)).toBeUndefined();
  });

  test('a corrupt image stays a 404, is recorded unreadable, and its job ran once and is not retried', async () => {
    const file = await upload('broken.jpg', Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(4096)]));
    expect(await waitFor(async () => (await thumbnails.state(file.sha256)) === 'unreadable', 20_000, 100)).toBe(true);
    expect((await thumbnail(file.id)).status).toBe(404);
    const connection = connectRedis(stack.env.config, 'producer');
    const queue = new Queue(THUMBNAIL_QUEUE, { connection, prefix: bullPrefix(stack.env.config, stack.env.config.queuePrefix) });
    try {
      const job = await queue.getJob(thumbnailJobId(file.sha256));
      expect(await job?.getState()).toBe('failed');
      expect(job?.attemptsMade).toBe(1);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });

  test('files with the same content share one thumbnail; it goes with the last content that has its digest, and no quota moves', async () => {
    const bytes = await picture('jpeg', 800, 600);
    const usage = async () => (await api.get('/v1/users/me/usage')).body;
    const before = await usage();
    const a = await upload('twin-a.jpg', bytes);
    const b = await upload('twin-b.jpg', bytes);
    await settled(a.id);
    expect((await thumbnail(b.id)).status).toBe(200);
    const sweeper = new ThumbnailSweeper(store, thumbnails);
    const after = await usage();
    // The two uploads count, the thumbnails do not.
    expect(after.usedBytes - before.usedBytes).toBe(2 * bytes.length);

    const purge = async (id: string) => {
      expect((await api.delete(`/v1/files/${id}`)).status).toBe(200);
      expect((await api.delete(`/v1/trash/${id}`)).status).toBe(204);
    };
    await purge(a.id);
    await sweeper.sweep();
    expect(await thumbnails.state(a.sha256)).toBe('ready');
    expect((await thumbnail(b.id)).status).toBe(200);

    await purge(b.id);
    const { thumbnailsRemoved } = await sweeper.sweep();
    expect(thumbnailsRemoved).toBeGreaterThanOrEqual(1);
    expect(await thumbnails.state(a.sha256)).toBeUndefined();
    for (const size of THUMBNAIL_SIZES) expect(await store.stat(thumbnailKey(a.sha256, size))).toBeUndefined();
    expect((await usage()).usedBytes).toBe(before.usedBytes);
  });

  test('a lost job is made again when the thumbnail is asked for', async () => {
    const file = await upload('lost.png', await picture('png', 400, 300));
    await settled(file.id);
    // As if the images were lost after the row said ready.
    for (const size of THUMBNAIL_SIZES) await store.remove(thumbnailKey(file.sha256, size));
    expect((await thumbnail(file.id)).status).toBe(404);
    const res = await settled(file.id);
    expect(res.headers.get('content-type')).toBe('image/webp');
  });
});
