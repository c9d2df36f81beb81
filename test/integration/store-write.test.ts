import { randomBytes } from 'node:crypto';
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
