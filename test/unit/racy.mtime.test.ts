import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FINE_MTIME_TICK_MS, isRacy, MTIME_TICK_MS, mtimeStep } from '../../clients/src/cli/scan';

/**
 * When a file's size and mtime may vouch for its bytes (clients/src/cli/scan.ts): an mtime in whole
 * seconds may come from a file system that keeps nothing finer (FAT: 2 s), so it stays in doubt for
 * the coarsest step; an mtime with a fraction proves a fine clock, and is trusted once that short
 * step has passed, so a file just written is not hashed a second time after its upload.
 */
describe('racy mtimes', () => {
  const now = 1_800_000_000_000;

  test('an mtime in whole seconds is in doubt for the coarsest step', () => {
    const whole = now - 1000;
    expect(mtimeStep(whole)).toBe(MTIME_TICK_MS);
    expect(isRacy(whole, now)).toBe(true);
    expect(isRacy(whole, whole + MTIME_TICK_MS - 1)).toBe(true);
    expect(isRacy(whole, whole + MTIME_TICK_MS)).toBe(false);
  });

  test('an mtime with a fraction of a second is in doubt only for the fine step', () => {
    const fine = now - 1000 + 123.456;
    expect(mtimeStep(fine)).toBe(FINE_MTIME_TICK_MS);
    expect(isRacy(fine, fine + FINE_MTIME_TICK_MS - 1)).toBe(true);
    expect(isRacy(fine, fine + FINE_MTIME_TICK_MS)).toBe(false);
    expect(isRacy(fine, fine + 400)).toBe(false);
  });

  test('a file written on this machine carries a fraction, and is trusted a moment later', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'racy-'));
    try {
      const file = path.join(dir, 'f.bin');
      // Several writes: one of them landing on a whole second by chance must not fail the test.
      const steps: number[] = [];
      for (let i = 0; i < 5; i++) {
        await fs.writeFile(file, `v${i}`);
        steps.push(mtimeStep((await fs.stat(file)).mtimeMs));
        await new Promise((r) => setTimeout(r, 7));
      }
      expect(steps.filter((s) => s === FINE_MTIME_TICK_MS).length).toBeGreaterThanOrEqual(4);
      const { mtimeMs } = await fs.stat(file);
      await new Promise((r) => setTimeout(r, FINE_MTIME_TICK_MS + 50));
      if (mtimeStep(mtimeMs) === FINE_MTIME_TICK_MS) expect(isRacy(mtimeMs, Date.now())).toBe(false);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
