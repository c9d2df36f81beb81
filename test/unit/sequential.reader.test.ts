import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SequentialReader } from '../../clients/src/cli/sequential.reader';

const MAX_VIEW = 512 * 1024;

test('forward views of any length up to the most, across block boundaries and at the end, are the file\'s bytes', async () => {
  // Not a multiple of the 4 MiB block, so the last block is short.
  const content = randomBytes(9 * 1024 * 1024 + 12_345);
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'seq-')), 'f');
  writeFileSync(file, content);
  const fd = await open(file, 'r');
  try {
    const reader = new SequentialReader(fd, content.length, MAX_VIEW);
    let views = 0;
    // Steps shorter and longer than the views, so some views overlap the last and some skip bytes.
    for (let at = 0, n = 1; at < content.length; n = (n * 48_271) % 2_147_483_647) {
      const length = 1 + (n % MAX_VIEW);
      const view = await reader.view(at, length);
      expect(view.equals(content.subarray(at, at + length))).toBe(true);
      views++;
      at += 1 + (n % (MAX_VIEW + 100_000));
    }
    expect(views).toBeGreaterThan(20);
    expect((await reader.view(content.length - 10, MAX_VIEW)).equals(content.subarray(content.length - 10))).toBe(true);
    await expect(reader.view(0, 1)).rejects.toThrow(/went back/);
    await reader.settle();
  } finally {
    await fd.close();
  }
});
