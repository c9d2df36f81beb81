import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { conflictedName } from '../../clients/src/cli/scan';
import { cliAccount, readTree, serverTree, sha256, sorted, syncOnceOk, tempDir } from './cli.support';

/** docs/CLIENT.md guarantees 1 and 5 for renames that swap names, and files created on the server without content. */
let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack.close();
});

const account = () => cliAccount(stack, 'swap');
const once = syncOnceOk;

const idsByName = async (api: FilesyncClient) => new Map((await api.listFiles({ limit: 100 })).items.map((f) => [f.name, f.id]));

describe('renames that swap names', () => {
  test('a -> b and b -> a in one pass are sent as renames and reach another device as renames', async () => {
    const a = await account();
    const [one, two] = [await tempDir('swap-1'), await tempDir('swap-2')];
    await fs.writeFile(path.join(one, 'a.txt'), 'content of a');
    await fs.writeFile(path.join(one, 'b.txt'), 'content of b');
    await once(one, a.env('one'));
    await once(two, a.env('two'));
    const before = await idsByName(a.api);
    await fs.rename(path.join(one, 'a.txt'), path.join(one, 'tmp'));
    await fs.rename(path.join(one, 'b.txt'), path.join(one, 'a.txt'));
    await fs.rename(path.join(one, 'tmp'), path.join(one, 'b.txt'));
    const sent = await once(one, a.env('one'));
    expect(sent.stdout).not.toContain('uploaded');
    const after = await idsByName(a.api);
    expect([after.get('a.txt'), after.get('b.txt')]).toEqual([before.get('b.txt'), before.get('a.txt')]);
    expect(sorted(await serverTree(a.api))).toEqual(sorted(await readTree(one)));
    expect((await once(one, a.env('one'))).stdout).toBe('');

    const got = await once(two, a.env('two'));
    expect(got.stdout).not.toContain('downloaded');
    expect(got.stdout).not.toContain('conflict');
    expect(await fs.readFile(path.join(two, 'a.txt'), 'utf8')).toBe('content of b');
    expect(await fs.readFile(path.join(two, 'b.txt'), 'utf8')).toBe('content of a');
    expect(sorted(await readTree(two))).toEqual(sorted(await serverTree(a.api)));
    expect(existsSync(path.join(two, '.filesync', 'parked')) ? await fs.readdir(path.join(two, '.filesync', 'parked')) : []).toEqual([]);
    expect((await once(two, a.env('two'))).stdout).toBe('');
  });

  test('two files of the same name swapped across folders, and two folders swapped, converge', async () => {
    const a = await account();
    const [one, two] = [await tempDir('swapx-1'), await tempDir('swapx-2')];
    for (const d of ['left', 'right', 'p', 'q']) await fs.mkdir(path.join(one, d));
    await fs.writeFile(path.join(one, 'left', 'f.txt'), 'left');
    await fs.writeFile(path.join(one, 'right', 'f.txt'), 'right');
    await fs.writeFile(path.join(one, 'p', 'in-p.txt'), 'p');
    await fs.writeFile(path.join(one, 'q', 'in-q.txt'), 'q');
    await once(one, a.env('one'));
    await once(two, a.env('two'));
    await fs.rename(path.join(one, 'left', 'f.txt'), path.join(one, 'tmp'));
    await fs.rename(path.join(one, 'right', 'f.txt'), path.join(one, 'left', 'f.txt'));
    await fs.rename(path.join(one, 'tmp'), path.join(one, 'right', 'f.txt'));
    await fs.rename(path.join(one, 'p'), path.join(one, 'tmp'));
    await fs.rename(path.join(one, 'q'), path.join(one, 'p'));
    await fs.rename(path.join(one, 'tmp'), path.join(one, 'q'));
    const sent = await once(one, a.env('one'));
    expect(sent.stdout).not.toContain('uploaded');
    expect(sorted(await serverTree(a.api))).toEqual(sorted(await readTree(one)));
    const got = await once(two, a.env('two'));
    expect(got.stdout).not.toContain('downloaded');
    expect(await fs.readFile(path.join(two, 'left', 'f.txt'), 'utf8')).toBe('right');
    expect(await fs.readFile(path.join(two, 'p', 'in-q.txt'), 'utf8')).toBe('q');
    expect(sorted(await readTree(two))).toEqual(sorted(await serverTree(a.api)));
    expect((await once(one, a.env('one'))).stdout).toBe('');
    expect((await once(two, a.env('two'))).stdout).toBe('');
  });

  test('a file swapped into the place of one whose size and mtime it shares is sent, though its own folder is deleted', async () => {
    // Two files of one size written in one tick of the kernel's clock share their mtime (set here
    // outright). After the swap, the one at Notes.md has the stat Notes.md had; its inode is another.
    const a = await account();
    const [one, two] = [await tempDir('swaps-1'), await tempDir('swaps-2')];
    await fs.mkdir(path.join(one, 'docs'));
    await fs.writeFile(path.join(one, 'Notes.md'), 'notes, first line\n');
    await fs.writeFile(path.join(one, 'docs', 'x.txt'), 'x, the other text\n');
    const tick = new Date('2026-11-20T10:00:00.004Z');
    for (const f of ['Notes.md', 'docs/x.txt']) await fs.utimes(path.join(one, f), tick, tick);
    await once(one, a.env('one'));
    await once(two, a.env('two'));

    await fs.rename(path.join(one, 'Notes.md'), path.join(one, 'tmp'));
    await fs.rename(path.join(one, 'docs', 'x.txt'), path.join(one, 'Notes.md'));
    await fs.rename(path.join(one, 'tmp'), path.join(one, 'docs', 'x.txt'));
    await fs.rm(path.join(one, 'docs'), { recursive: true });
    await once(one, a.env('one'));

    const tree = await serverTree(a.api);
    expect(sorted(tree)).toEqual(sorted(await readTree(one)));
    expect(tree.get('Notes.md')).toBe(sha256('x, the other text\n'));
    await once(two, a.env('two'));
    expect(await fs.readFile(path.join(two, 'Notes.md'), 'utf8')).toBe('x, the other text\n');
    expect(sorted(await readTree(two))).toEqual(sorted(tree));
  });
});

describe('a file created on the server without content', () => {
  test('appears as an empty file, then gets its bytes when the server does', async () => {
    const a = await account();
    const dir = await tempDir('empty');
    await once(dir, a.env('one'));
    const id = randomBytes(16).toString('hex');
    const res = await a.api.syncOps([{ opId: String(Date.now()), type: 'create', resourceId: id, payload: { resourceType: 'file', name: 'empty.txt', parentId: null } }]);
    expect(res.failed).toBeNull();
    expect((await once(dir, a.env('one'))).stdout).toContain('created empty.txt');
    expect((await fs.stat(path.join(dir, 'empty.txt'))).size).toBe(0);
    expect((await once(dir, a.env('one'))).stdout).toBe('');
    await a.api.replaceContent(id, { content: Buffer.from('now with bytes'), ifNoneMatch: true });
    await once(dir, a.env('one'));
    expect(await fs.readFile(path.join(dir, 'empty.txt'), 'utf8')).toBe('now with bytes');
  });

  test('local bytes written into it are sent as its content', async () => {
    const a = await account();
    const dir = await tempDir('empty-edit');
    const id = randomBytes(16).toString('hex');
    await a.api.syncOps([{ opId: String(Date.now()), type: 'create', resourceId: id, payload: { resourceType: 'file', name: 'later.txt', parentId: null } }]);
    await once(dir, a.env('one'));
    await fs.writeFile(path.join(dir, 'later.txt'), 'written here');
    await once(dir, a.env('one'));
    expect((await a.api.getFile(id)).size).toBe('written here'.length);
  });
});

describe('a rename onto a name the server keeps', () => {
  test('a folder renamed onto the name of one deleted here, which the server filled meanwhile: both kept, no churn', async () => {
    const a = await account();
    const [one, two] = [await tempDir('clash-1'), await tempDir('clash-2')];
    for (const d of ['docs', 'dir']) await fs.mkdir(path.join(one, d));
    await fs.writeFile(path.join(one, 'docs', 'old.txt'), 'old docs');
    await fs.writeFile(path.join(one, 'dir', 'mine.txt'), 'mine');
    await once(one, a.env('one'));
    await once(two, a.env('two'));
    // Here: docs deleted, dir renamed to docs. There, meanwhile: a new file in docs.
    await fs.rm(path.join(one, 'docs'), { recursive: true });
    await fs.rename(path.join(one, 'dir'), path.join(one, 'docs'));
    await fs.writeFile(path.join(two, 'docs', 'new.txt'), 'new in docs');
    await once(two, a.env('two'));
    const sent = await once(one, a.env('one'));
    expect(sent.stdout).not.toContain('.filesync-swap-');
    expect(sent.stdout).toContain('conflict: kept docs as ');
    const tree = await readTree(one);
    // The server's docs came back with what it gained; the renamed folder is kept beside it with its file.
    expect(tree.has('docs/new.txt')).toBe(true);
    const copy = [...tree.keys()].find((k) => k.endsWith('/mine.txt'));
    expect(copy).toBeDefined();
    expect(copy!.startsWith('docs/')).toBe(false);
    expect(sorted(await serverTree(a.api))).toEqual(sorted(tree));
    expect((await once(one, a.env('one'))).stdout).toBe('');
    await once(two, a.env('two'));
    expect(sorted(await readTree(two))).toEqual(sorted(tree));
  });
});

describe('conflicted copies of one name in one second', () => {
  /** Copies of `name` by device `one` for the next ten seconds, held here already as synced files. */
  const holdCopyNames = async (dir: string, name: string) => {
    const now = Date.now();
    const taken = Array.from({ length: 10 }, (_, k) => conflictedName(name, 'one', new Date(now + k * 1000)));
    for (const copy of taken) await fs.writeFile(path.join(dir, copy), `copy ${copy}`);
    return taken;
  };

  test('a new local file at a name the server filled meanwhile becomes the next free copy, without waiting for the clock', async () => {
    const a = await account();
    const dir = await tempDir('copies');
    const taken = await holdCopyNames(dir, 'a.txt');
    await once(dir, a.env('one'));
    await a.api.uploadFile({ content: Buffer.from('the server a.txt'), name: 'a.txt' });
    await fs.writeFile(path.join(dir, 'a.txt'), 'the local a.txt');
    const res = await once(dir, a.env('one'));
    const copy = /conflict: kept a\.txt as (a \(conflicted copy one \d{4}-\d\d-\d\d \d{6} \d+\)\.txt)/.exec(res.stdout)?.[1];
    expect(copy).toBeDefined();
    expect(await fs.readFile(path.join(dir, copy!), 'utf8')).toBe('the local a.txt');
    expect(await fs.readFile(path.join(dir, 'a.txt'), 'utf8')).toBe('the server a.txt');
    for (const name of taken) expect(await fs.readFile(path.join(dir, name), 'utf8')).toBe(`copy ${name}`);
    expect(sorted(await readTree(dir))).toEqual(sorted(await serverTree(a.api)));
    expect((await once(dir, a.env('one'))).stdout).toBe('');
  });

  test('two local names equal after NFC: the second becomes the next free copy', async () => {
    const a = await account();
    const dir = await tempDir('copies-nfc');
    const taken = await holdCopyNames(dir, '\u00e9t\u00e9.txt');
    await once(dir, a.env('one'));
    await fs.writeFile(path.join(dir, '\u00e9t\u00e9.txt'), 'composed');
    await fs.writeFile(path.join(dir, 'e\u0301te\u0301.txt'), 'decomposed');
    const res = await once(dir, a.env('one'));
    expect(res.stdout).toMatch(/conflict: kept \u00e9t\u00e9\.txt as \u00e9t\u00e9 \(conflicted copy one \d{4}-\d\d-\d\d \d{6} \d+\)\.txt/);
    const contents = await Promise.all((await fs.readdir(dir)).filter((n) => !n.startsWith('.')).map((n) => fs.readFile(path.join(dir, n), 'utf8')));
    expect(contents).toEqual(expect.arrayContaining(['composed', 'decomposed', ...taken.map((t) => `copy ${t}`)]));
    expect(sorted(await readTree(dir))).toEqual(sorted(await serverTree(a.api)));
    expect((await once(dir, a.env('one'))).stdout).toBe('');
  });
});
