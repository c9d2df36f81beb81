import { promises as fs } from 'node:fs';
import path from 'node:path';
import { startStack, type TestStack } from '../support/stack';
import { cliAccount, readTree, serverTree, sha256, sorted, syncOnceOk, tempDir } from './cli.support';

/**
 * docs/CLIENT.md guarantees 1 and 2 when the folder a device last saw a file in is gone from the
 * server: another device moved the file out of it and deleted it, while this device edited the file.
 */
let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack.close();
});

const once = syncOnceOk;

test('a file edited here, moved out of a folder the server then deleted, keeps the edit and converges in one run', async () => {
  const a = await cliAccount(stack, 'vanish');
  const [one, two] = [await tempDir('vanish-1'), await tempDir('vanish-2')];
  await fs.mkdir(path.join(one, 'Docs'));
  await fs.mkdir(path.join(one, 'photos'));
  await fs.writeFile(path.join(one, 'Docs', 'b.txt'), 'the first lines\n');
  await fs.writeFile(path.join(one, 'photos', 'notes.md'), 'notes\n');
  await fs.writeFile(path.join(one, 'photos', 'data.bin'), 'data\n');
  await fs.writeFile(path.join(one, 'photos', 'a.txt'), 'a\n');
  await once(one, a.env('one'));
  await once(two, a.env('two'));

  // One device moves b.txt into photos, deletes Docs, and names photos Docs: the server's Docs is
  // now the folder that was photos, and the folder b.txt was in is gone.
  await fs.rename(path.join(one, 'Docs', 'b.txt'), path.join(one, 'photos', 'b.txt'));
  await fs.rm(path.join(one, 'Docs'), { recursive: true });
  await fs.rename(path.join(one, 'photos'), path.join(one, 'Docs'));
  await fs.rename(path.join(one, 'Docs', 'notes.md'), path.join(one, 'Docs', 'tmp'));
  await fs.rename(path.join(one, 'Docs', 'data.bin'), path.join(one, 'Docs', 'notes.md'));
  await fs.rename(path.join(one, 'Docs', 'tmp'), path.join(one, 'Docs', 'data.bin'));
  await once(one, a.env('one'));

  // Meanwhile the other edits b.txt where it last saw it, writes a notes.md beside it, and deletes photos.
  await fs.appendFile(path.join(two, 'Docs', 'b.txt'), 'a line written on two\n');
  await fs.writeFile(path.join(two, 'Docs', 'notes.md'), 'new notes on two\n');
  await fs.rm(path.join(two, 'photos'), { recursive: true });
  await once(two, a.env('two'));

  const edited = sha256(Buffer.from('the first lines\na line written on two\n'));
  const tree = await readTree(two);
  expect([...tree.values()]).toContain(edited);
  expect(sorted(tree)).toEqual(sorted(await serverTree(a.api)));
  expect((await once(two, a.env('two'))).stdout).toBe('');
  await once(one, a.env('one'));
  expect(sorted(await readTree(one))).toEqual(sorted(tree));
});
