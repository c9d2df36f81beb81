import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { createTestEnv, type TestEnv } from '../support/harness';
import { DRIVERS, onDriver, StoredContent } from '../support/drivers';

/** ContentStore.write, by which the workers store thumbnails: whole bytes under a key, replaced whole, nothing staged left behind. */
describe.each(DRIVERS)('write on the %s driver', (driver) => {
  let env: TestEnv;
  let stored: StoredContent;

  beforeAll(async () => {
    env = await createTestEnv(onDriver(driver));
    stored = new StoredContent(env);
  });

  afterAll(async () => {
    await env?.dropAll();
  });

  const read = async (key: string) => {
    const handle = await stored.store.open(key);
    const chunks: Buffer[] = [];
    for await (const chunk of await handle.read()) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };

  test('writes the bytes under a key in a folder not made yet, replaces them whole, and leaves no staging entry', async () => {
    const key = 'thumbs/write-test-64.webp';
    const first = randomBytes(5000);
    await stored.store.write(key, first);
    expect((await stored.store.stat(key))?.size).toBe(first.length);
    expect((await read(key)).equals(first)).toBe(true);

    // Shorter bytes over longer ones: nothing of the first write remains (and a size cached by a read is not trusted).
    const second = randomBytes(1200);
    await stored.store.write(key, second);
    expect((await stored.store.stat(key))?.size).toBe(second.length);
    expect((await read(key)).equals(second)).toBe(true);

    expect(await stored.staging()).toEqual([]);
    expect(await stored.keys()).toEqual([key]);
    if (driver === 's3') expect(await stored.uploadDirFiles()).toEqual([]);
  });
});

/** LocalContentStore.stageBytes, by which a bulk upload stages its small files: what `stage` makes of the same bytes, in one write. */
describe('stageBytes on the local driver', () => {
  let env: TestEnv;
  let stored: StoredContent;

  beforeAll(async () => {
    env = await createTestEnv(onDriver('local'));
    stored = new StoredContent(env);
  });

  afterAll(async () => {
    await env?.dropAll();
  });

  test('measures and places the bytes as a streamed stage does; too many bytes are refused and leave no staging entry', async () => {
    const { store } = stored;
    const bytes = randomBytes(70_000);
    const whole = await store.stageBytes!(bytes, { maxBytes: bytes.length });
    const streamed = await store.stage(Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]), { maxBytes: bytes.length });
    expect({ size: whole.size, sha256: whole.sha256, crc32: whole.crc32 }).toEqual({ size: streamed.size, sha256: streamed.sha256, crc32: streamed.crc32 });
    expect(whole.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(whole.crc32).toBe(crc32(bytes));
    await store.discard(streamed);

    await store.place(whole, 'bulk/staged-whole.bin');
    const handle = await store.open('bulk/staged-whole.bin');
    const chunks: Buffer[] = [];
    for await (const chunk of await handle.read()) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);

    await expect(store.stageBytes!(bytes, { maxBytes: bytes.length - 1 })).rejects.toMatchObject({ code: 'FILE_TOO_LARGE' });
    expect(await stored.staging()).toEqual([]);
    expect(await stored.keys()).toEqual(['bulk/staged-whole.bin']);
  });

  test('a key naming a path outside the upload directory is refused by every operation; dotted names inside it are kept', async () => {
    const { store } = stored;
    for (const key of ['../escape.bin', 'bulk/../../escape.bin', '/etc/hostname', 'bulk/./../../escape.bin', '..']) {
      await expect(store.stat(key)).rejects.toThrow(/outside the upload directory/);
      await expect(store.open(key)).rejects.toThrow(/outside the upload directory/);
      await expect(store.write(key, Buffer.from('x'))).rejects.toThrow(/outside the upload directory/);
    }
    // Resolved like any path, a key with `.` segments or doubled slashes still lands inside the root.
    await store.write('dots/./a..b//.c', Buffer.from('dotted'));
    expect((await store.stat('dots/a..b/.c'))?.size).toBe(6);
    await store.remove('dots/a..b/.c');
  });
});
