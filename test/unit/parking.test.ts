import { mkdtemp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PARKING, park, unparkAll } from '../../clients/src/cli/parking';
import { conflictedName } from '../../clients/src/cli/scan';

/** Putting back what a pass parked (clients/src/cli/parking.ts), on a real folder. */
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'parking-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('a parked file whose place and conflicted copy name are both taken lands beside them, replacing neither', async () => {
  const id = 'a'.repeat(32);
  await writeFile(join(dir, 'a.txt'), 'parked bytes');
  await park(dir, 'a.txt', id);
  await writeFile(join(dir, 'a.txt'), 'the new a.txt');
  // Copies of a.txt made this second and the next, as another conflict of the same pass would name them.
  const now = Date.now();
  const taken = [conflictedName('a.txt', 'dev', new Date(now)), conflictedName('a.txt', 'dev', new Date(now + 1000))];
  for (const name of taken) await writeFile(join(dir, name), `copy ${name}`);

  const [restored] = await unparkAll(dir, new Map(), 'dev', new Map([[id, 'a.txt']]));
  expect(restored).toBeDefined();
  expect(['a.txt', ...taken]).not.toContain(restored);
  expect(restored).toMatch(/^a \(conflicted copy dev \d{4}-\d\d-\d\d \d{6}( \d+)?\)\.txt$/);
  expect(await readFile(join(dir, restored!), 'utf8')).toBe('parked bytes');
  expect(await readFile(join(dir, 'a.txt'), 'utf8')).toBe('the new a.txt');
  for (const name of taken) expect(await readFile(join(dir, name), 'utf8')).toBe(`copy ${name}`);
  expect(await readdir(join(dir, PARKING))).toEqual([]);
});

test('a parked node goes back to its place when that is free', async () => {
  const id = 'b'.repeat(32);
  await mkdir(join(dir, 'docs'));
  await writeFile(join(dir, 'docs', 'b.txt'), 'bytes');
  await park(dir, 'docs/b.txt', id);
  expect(await unparkAll(dir, new Map(), 'dev', new Map([[id, 'docs/b.txt']]))).toEqual(['docs/b.txt']);
  expect(await readFile(join(dir, 'docs', 'b.txt'), 'utf8')).toBe('bytes');
});

test('the nth conflicted copy of one name in one second is numbered', () => {
  const at = new Date(2026, 10, 24, 10, 15, 0);
  expect(conflictedName('report.txt', 'laptop', at)).toBe('report (conflicted copy laptop 2026-11-24 101500).txt');
  expect(conflictedName('report.txt', 'laptop', at, 2)).toBe('report (conflicted copy laptop 2026-11-24 101500 2).txt');
});
