import type { BaseNode } from '../../clients/src/cli/journal';
import { matchLocal } from '../../clients/src/cli/match';
import type { LocalEntry, LocalScan } from '../../clients/src/cli/scan';

/** How the client pairs what is on disk with its merge base (clients/src/cli/match.ts). */
const node = (id: string, parentId: string, name: string, type: 'file' | 'folder', ino: number, size = 0, mtimeMs = 1000): BaseNode => ({
  id, parentId, name, type, ino, size, mtimeMs, rev: 1, sha256: type === 'file' ? 'a'.repeat(64) : '',
});
const entry = (path: string, type: 'file' | 'folder', ino: number, size = 0, mtimeMs = 1000): LocalEntry => ({ path, disk: path, type, ino, size, mtimeMs, racy: false });
const scanOf = (entries: LocalEntry[]): LocalScan => ({ entries: new Map(entries.map((e) => [e.path, e])), unreadable: [], clashes: [], stableInodes: true });
const base = (nodes: BaseNode[]) => new Map(nodes.map((n) => [n.id, n]));
const none = () => false;
const idF = 'f'.repeat(32);
const idOld = '0'.repeat(32);
const idNew = '1'.repeat(32);

test('a file whose folder the base no longer holds, edited since, is found by its inode, not taken as new', () => {
  // The base lost `old` (the server deleted it) while keeping `b.txt` under it; on disk b.txt sits in
  // `Docs` (the base's `new`), 12 bytes longer and written later.
  const matched = matchLocal(
    base([node(idNew, '', 'Docs', 'folder', 10), node(idF, idOld, 'b.txt', 'file', 11, 16, 1000)]),
    scanOf([entry('Docs', 'folder', 10), entry('Docs/b.txt', 'file', 11, 28, 2000)]),
    none,
  );
  expect(matched.local.get(idF)).toMatchObject({ isNew: false, parentId: idNew, name: 'b.txt' });
  expect([...matched.local.values()].filter((n) => n.isNew)).toEqual([]);
  expect(matched.unknown.has(idF)).toBe(false);
});

test('a file that keeps its place is still found by its inode only when its size and mtime agree', () => {
  // Deleted at its place, and its inode reused by another file elsewhere: that one is new.
  const matched = matchLocal(
    base([node(idNew, '', 'Docs', 'folder', 10), node(idF, idNew, 'b.txt', 'file', 11, 16, 1000)]),
    scanOf([entry('Docs', 'folder', 10), entry('other.txt', 'file', 11, 28, 2000)]),
    none,
  );
  expect(matched.local.has(idF)).toBe(false);
  expect([...matched.local.values()].find((n) => n.entry.path === 'other.txt')).toMatchObject({ isNew: true });
});

test('a file whose folder the base no longer holds and whose inode is nowhere is unknown, never deleted', () => {
  const matched = matchLocal(base([node(idF, idOld, 'b.txt', 'file', 11, 16)]), scanOf([entry('x.txt', 'file', 12, 3)]), none);
  expect(matched.local.has(idF)).toBe(false);
  expect(matched.unknown.has(idF)).toBe(true);
});


test('such a file never takes what another node of the base finds at its own place', () => {
  // Its inode now belongs to c.txt (freed, then reused), which the base holds at that place.
  const idC = 'c'.repeat(32);
  const matched = matchLocal(
    // Listed first, so a matcher that looked at b.txt in turn would take Docs/c.txt before c.txt does.
    base([node(idF, idOld, 'b.txt', 'file', 12, 16, 1000), node(idNew, '', 'Docs', 'folder', 10), node(idC, idNew, 'c.txt', 'file', 12, 5, 1000)]),
    scanOf([entry('Docs', 'folder', 10), entry('Docs/c.txt', 'file', 12, 5, 1000)]),
    none,
  );
  expect(matched.local.get(idC)).toMatchObject({ isNew: false, name: 'c.txt' });
  expect(matched.local.has(idF)).toBe(false);
  expect(matched.unknown.has(idF)).toBe(true);
});
