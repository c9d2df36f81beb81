import { promises as fs } from 'node:fs';
import path from 'node:path';
import { startStack, type TestStack } from '../support/stack';
import { cliAccount, readTree, serverTree, sha256, sorted, syncOnceOk, tempDir } from './cli.support';

/**
 * docs/CLIENT.md guarantees 1 and 6 for names a disk holds decomposed (NFD, as macOS hands them out)
 * while the service stores them composed (NFC): a file or folder keeps its spelling on disk, takes
 * the server's changes where it is, and never ends beside a second spelling of its own name.
 */
let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack.close();
});

const account = () => cliAccount(stack, 'nfd');
const once = syncOnceOk;

/** The names in a folder as the disk spells them, the state folder left out. */
const spelled = async (dir: string) => (await fs.readdir(dir)).filter((n) => n !== '.filesync').sort();

const ETE_NFD = 'e\u0301te.txt';
const ETE_NFC = ETE_NFD.normalize('NFC');
const DIR_NFD = 'cafe\u0301';

describe('names held decomposed on disk', () => {
  test("a file under its NFD name takes another device's edit in place: one file, no conflicted copy", async () => {
    const a = await account();
    const [mac, linux] = [await tempDir('nfd-mac'), await tempDir('nfd-linux')];
    await fs.writeFile(path.join(mac, ETE_NFD), 'first');
    await fs.mkdir(path.join(mac, DIR_NFD));
    await fs.writeFile(path.join(mac, DIR_NFD, ETE_NFD), 'inner first');
    await once(mac, a.env('mac'));
    await once(linux, a.env('linux'));
    expect(await spelled(linux)).toEqual([DIR_NFD.normalize('NFC'), ETE_NFC]);

    await fs.writeFile(path.join(linux, ETE_NFC), 'edited on linux');
    await fs.writeFile(path.join(linux, DIR_NFD.normalize('NFC'), ETE_NFC), 'inner edited on linux');
    await once(linux, a.env('linux'));

    const pulled = await once(mac, a.env('mac'));
    expect(pulled.stdout).not.toMatch(/conflict|uploaded/);
    expect(await spelled(mac)).toEqual([DIR_NFD, ETE_NFD]);
    expect(await spelled(path.join(mac, DIR_NFD))).toEqual([ETE_NFD]);
    expect(await fs.readFile(path.join(mac, ETE_NFD), 'utf8')).toBe('edited on linux');
    expect(await fs.readFile(path.join(mac, DIR_NFD, ETE_NFD), 'utf8')).toBe('inner edited on linux');
    const server = sorted(await serverTree(a.api));
    expect(server).toEqual(sorted(await readTree(mac)));

    // Nothing is left to do on either device, and the linux one keeps its own tree.
    expect((await once(mac, a.env('mac'))).stdout).toBe('');
    expect((await once(linux, a.env('linux'))).stdout).toBe('');
    expect(sorted(await readTree(linux))).toEqual(server);
    expect(sorted(await serverTree(a.api))).toEqual(server);
  });

  test('a rename from one spelling to the other is no change', async () => {
    const a = await account();
    const mac = await tempDir('nfd-respell');
    await fs.writeFile(path.join(mac, ETE_NFD), 'content');
    await once(mac, a.env('mac'));
    const before = (await a.api.listFiles({ limit: 10 })).items.map((f) => [f.id, f.name, f.sha256]);
    await fs.rename(path.join(mac, ETE_NFD), path.join(mac, ETE_NFC));
    expect((await once(mac, a.env('mac'))).stdout).toBe('');
    expect((await a.api.listFiles({ limit: 10 })).items.map((f) => [f.id, f.name, f.sha256])).toEqual(before);
  });

  test('a new NFD file beside the synced NFC one of its name is the conflicted copy; the synced file keeps its id and edit', async () => {
    const a = await account();
    const linux = await tempDir('nfd-clash');
    await fs.writeFile(path.join(linux, ETE_NFC), 'synced');
    await once(linux, a.env('linux'));
    const [synced] = (await a.api.listFiles({ limit: 10 })).items;

    await fs.writeFile(path.join(linux, ETE_NFC), 'edited');
    await fs.writeFile(path.join(linux, ETE_NFD), 'newcomer');
    const res = await once(linux, a.env('linux'));
    expect(res.stdout).toMatch(/conflict: kept éte\.txt as éte \(conflicted copy linux [^)]+\)\.txt/);

    const files = new Map((await a.api.listFiles({ limit: 10 })).items.map((f) => [f.name, f]));
    expect(files.get(ETE_NFC)?.id).toBe(synced!.id);
    expect(files.get(ETE_NFC)?.sha256).toBe(sha256('edited'));
    const copies = [...files.values()].filter((f) => f.name.startsWith('éte (conflicted copy linux '));
    expect(copies.map((f) => f.sha256)).toEqual([sha256('newcomer')]);
    expect(await spelled(linux)).toEqual([ETE_NFC, copies[0]!.name].sort());
    expect((await once(linux, a.env('linux'))).stdout).toBe('');
  });

  test('a node a killed run left parked goes back into its NFD folder', async () => {
    const a = await account();
    const mac = await tempDir('nfd-parked');
    await fs.mkdir(path.join(mac, DIR_NFD));
    await fs.writeFile(path.join(mac, DIR_NFD, 'a.txt'), 'parked content');
    await once(mac, a.env('mac'));
    const server = sorted(await serverTree(a.api));
    const feed = await a.api.changes({ limit: 100 });
    const id = feed.items.find((c) => c.name === 'a.txt')!.id;
    // What a run killed in the middle of a swap leaves: the node under its id in the parking folder.
    await fs.mkdir(path.join(mac, '.filesync', 'parked'), { recursive: true });
    await fs.rename(path.join(mac, DIR_NFD, 'a.txt'), path.join(mac, '.filesync', 'parked', id));

    expect((await once(mac, a.env('mac'))).stdout).toBe('');
    expect(await spelled(mac)).toEqual([DIR_NFD]);
    expect(await spelled(path.join(mac, DIR_NFD))).toEqual(['a.txt']);
    expect(sorted(await serverTree(a.api))).toEqual(server);
  });

  test('an NFD folder made on both sides is linked and takes the server\'s files and renames under its own spelling', async () => {
    const a = await account();
    const [mac, linux] = [await tempDir('nfd-link-mac'), await tempDir('nfd-link-linux')];
    await fs.mkdir(path.join(linux, DIR_NFD.normalize('NFC')));
    await fs.writeFile(path.join(linux, DIR_NFD.normalize('NFC'), 'y.txt'), 'from linux');
    await once(linux, a.env('linux'));
    await fs.mkdir(path.join(mac, DIR_NFD));
    await fs.writeFile(path.join(mac, DIR_NFD, 'x.txt'), 'from mac');
    await once(mac, a.env('mac'));
    expect(await spelled(mac)).toEqual([DIR_NFD]);
    expect(await spelled(path.join(mac, DIR_NFD))).toEqual(['x.txt', 'y.txt']);

    await once(linux, a.env('linux'));
    await fs.rename(path.join(linux, DIR_NFD.normalize('NFC'), 'y.txt'), path.join(linux, DIR_NFD.normalize('NFC'), ETE_NFC));
    await fs.writeFile(path.join(linux, DIR_NFD.normalize('NFC'), 'x.txt'), 'x edited on linux');
    await once(linux, a.env('linux'));
    const pulled = await once(mac, a.env('mac'));
    expect(pulled.stdout).not.toMatch(/conflict|uploaded|created/);
    expect(await spelled(mac)).toEqual([DIR_NFD]);
    expect(await spelled(path.join(mac, DIR_NFD))).toEqual(['x.txt', ETE_NFC]);
    expect(await fs.readFile(path.join(mac, DIR_NFD, 'x.txt'), 'utf8')).toBe('x edited on linux');
    const server = sorted(await serverTree(a.api));
    expect(sorted(await readTree(mac))).toEqual(server);
    expect((await once(mac, a.env('mac'))).stdout).toBe('');
    expect((await once(linux, a.env('linux'))).stdout).toBe('');
    expect(sorted(await readTree(linux))).toEqual(server);
  });
});
