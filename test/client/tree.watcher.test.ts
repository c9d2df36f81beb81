import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TreeWatcher } from '../../clients/src/cli/tree.watcher';

/** The watch-mode client's hints (clients/src/cli/tree.watcher.ts): what they name and what they leave out. */
async function watching(expected: (p: string) => 'file' | 'folder' | undefined = () => undefined) {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tree-watch-'));
  await fs.mkdir(path.join(dir, 'old', 'deep'), { recursive: true });
  await fs.mkdir(path.join(dir, '.filesync', 'tmp'), { recursive: true });
  const hints: string[] = [];
  const errors: Error[] = [];
  const w = new TreeWatcher(dir, (p) => hints.push(p), (e) => errors.push(e), expected);
  await w.start();
  return { dir, hints, errors, w };
}

async function until(ok: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

test('a write in a folder that existed at start, and in folders made later at any depth, is hinted', async () => {
  const { dir, hints, errors, w } = await watching();
  try {
    await fs.writeFile(path.join(dir, 'old', 'deep', 'a.txt'), 'a');
    await until(() => hints.includes('old/deep/a.txt'));
    expect(hints).toContain('old/deep/a.txt');
    await fs.mkdir(path.join(dir, 'new'));
    await until(() => hints.includes('new'));
    await until(() => w.size === 4);
    await fs.mkdir(path.join(dir, 'new', 'inner'));
    await until(() => w.size === 5);
    await fs.writeFile(path.join(dir, 'new', 'inner', 'b.txt'), 'b');
    await until(() => hints.includes('new/inner/b.txt'));
    expect(hints).toContain('new/inner/b.txt');
    // A folder removed and made again under its name is watched afresh.
    await fs.rm(path.join(dir, 'new'), { recursive: true });
    await until(() => w.size === 3);
    await fs.mkdir(path.join(dir, 'new'));
    await until(() => w.size === 4);
    await fs.writeFile(path.join(dir, 'new', 'c.txt'), 'c');
    await until(() => hints.includes('new/c.txt'));
    expect(hints).toContain('new/c.txt');
    expect(errors).toEqual([]);
  } finally {
    w.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('the state folder is never hinted, and an expected event is dropped while a later write is not', async () => {
  const seen = new Set<string>();
  const { dir, hints, w } = await watching((p) => {
    if (p !== 'placed.txt' || seen.has(p)) return undefined;
    seen.add(p);
    return 'file';
  });
  try {
    await fs.writeFile(path.join(dir, '.filesync', 'tmp', 'x'), 'x');
    await fs.writeFile(path.join(dir, '.filesync', 'journal.db'), 'x');
    await fs.writeFile(path.join(dir, '.filesync', 'tmp', 'placed.txt'), 'p');
    await fs.rename(path.join(dir, '.filesync', 'tmp', 'placed.txt'), path.join(dir, 'placed.txt'));
    await fs.writeFile(path.join(dir, 'marker.txt'), 'm');
    await until(() => hints.includes('marker.txt'));
    expect([...new Set(hints)]).toEqual(['marker.txt']);
    await fs.appendFile(path.join(dir, 'placed.txt'), 'local edit');
    await until(() => hints.includes('placed.txt'));
    expect(hints).toContain('placed.txt');
  } finally {
    w.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('a folder the client made itself is watched without a hint, unless something was in it before its watch began', async () => {
  const mine = new Set(['made', 'filled']);
  const { dir, hints, errors, w } = await watching((p) => (mine.delete(p) ? 'folder' : undefined));
  try {
    await fs.mkdir(path.join(dir, 'made'));
    await until(() => w.size === 4);
    expect(w.size).toBe(4);
    // Written after its watch began: the write's own event.
    await fs.writeFile(path.join(dir, 'made', 'a.txt'), 'a');
    await until(() => hints.includes('made/a.txt'));
    expect(hints).toContain('made/a.txt');
    expect(hints).not.toContain('made');
    // Made with something in it at once (as by a rename of a full folder): hinted once watched, as it may hold what no event named.
    const staged = path.join(dir, '.filesync', 'tmp', 'full');
    await fs.mkdir(staged);
    await fs.writeFile(path.join(staged, 'b.txt'), 'b');
    await fs.rename(staged, path.join(dir, 'filled'));
    await until(() => hints.includes('filled'));
    expect(hints).toContain('filled');
    expect(w.size).toBe(5);
    expect(errors).toEqual([]);
  } finally {
    w.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
});
