import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { FilesyncClient } from '../../clients/src/sdk';
import { startStack, type TestStack } from '../support/stack';
import { readTree, runCli, serverTree, sha256, sorted, tempDir } from './cli.support';
import { mountExfat, type ExfatMount } from './exfat.support';

/**
 * docs/CLIENT.md guarantee 6, its case-insensitive half, on a real case-insensitive file system: exFAT
 * mounted through FUSE. A device on an ordinary folder creates names that differ only in case; the
 * device on exFAT keeps both. exFAT also gives FUSE inode numbers that change when it is mounted
 * again, and mtimes in whole seconds: the journal must not mistake one file for another.
 */
let stack: TestStack;
let disk: ExfatMount;

beforeAll(async () => {
  stack = await startStack();
  disk = await mountExfat();
});

afterAll(async () => {
  await disk?.close();
  await stack.close();
});

async function account() {
  const username = `fold${randomBytes(4).toString('hex')}`;
  await stack.admin.post('/v1/users', { username, password: 'fold-password-1' });
  const api = new FilesyncClient({ server: stack.gateway.baseUrl });
  await api.login({ username, password: 'fold-password-1', deviceId: (await api.registerDevice({ name: 'api' })).id });
  const env = (device: string) => ({ FILESYNC_SERVER: stack.gateway.baseUrl, FILESYNC_USERNAME: username, FILESYNC_PASSWORD: 'fold-password-1', FILESYNC_DEVICE_NAME: device });
  return { api, env };
}

const write = async (dir: string, rel: string, content: string) => {
  await fs.mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
  await fs.writeFile(path.join(dir, rel), content);
};

const copyOf = (name: string, ext = '') => new RegExp(`^${name} \\(conflicted copy stick \\d{4}-\\d\\d-\\d\\d \\d{6}\\)${ext.replace('.', '\\.')}$`);

test('on exFAT, two server names differing only in case are both kept, the second as a conflicted copy', async () => {
  const a = await account();
  const laptop = await tempDir('fold-laptop');
  const stick = path.join(disk.root, `sync-${randomBytes(3).toString('hex')}`);
  await fs.mkdir(stick);
  // The laptop's file system tells the names apart; the first of each pair reaches the server first.
  await write(laptop, 'Report.txt', 'first report');
  await write(laptop, 'Docs/a.txt', 'in Docs');
  expect((await runCli(['sync', laptop, '--once'], a.env('laptop'))).code).toBe(0);
  await write(laptop, 'report.txt', 'second report');
  await write(laptop, 'docs/b.txt', 'in docs');
  expect((await runCli(['sync', laptop, '--once'], a.env('laptop'))).code).toBe(0);

  const first = await runCli(['sync', stick, '--once'], a.env('stick'));
  expect(first.code).toBe(0);
  expect(first.stdout).toMatch(/conflict: kept report\.txt as report \(conflicted copy stick [^)]+\)\.txt/);
  expect(first.stdout).toMatch(/conflict: kept docs as docs \(conflicted copy stick [^)]+\)/);
  const here = await readTree(stick);
  expect(here.get('Report.txt')).toBe(sha256('first report'));
  expect(here.get('Docs/a.txt')).toBe(sha256('in Docs'));
  const [fileCopy] = [...here.keys()].filter((p) => copyOf('report', '.txt').test(p));
  const [folderCopy] = [...here.keys()].filter((p) => copyOf('docs').test(p));
  expect(fileCopy && here.get(fileCopy)).toBe(sha256('second report'));
  expect(folderCopy && here.get(`${folderCopy}/b.txt`)).toBe(sha256('in docs'));
  expect(here.size).toBe(6);
  // The copies are names on the service too, so every device converges on one tree.
  expect(sorted(await serverTree(a.api))).toEqual(sorted(here));
  const again = await runCli(['sync', stick, '--once'], a.env('stick'));
  expect(again.code).toBe(0);
  expect(again.stdout).toBe('');

  // A name the server gives later that differs only in case from a synced local file: the local one keeps it.
  await write(laptop, 'notes.txt', 'notes');
  expect((await runCli(['sync', laptop, '--once'], a.env('laptop'))).code).toBe(0);
  expect((await runCli(['sync', stick, '--once'], a.env('stick'))).code).toBe(0);
  await write(laptop, 'NOTES.txt', 'NOTES');
  expect((await runCli(['sync', laptop, '--once'], a.env('laptop'))).code).toBe(0);
  const later = await runCli(['sync', stick, '--once'], a.env('stick'));
  expect(later.code).toBe(0);
  const now = await readTree(stick);
  expect(now.get('notes.txt')).toBe(sha256('notes'));
  expect([...now.entries()].filter(([p]) => copyOf('NOTES', '.txt').test(p)).map(([, h]) => h)).toEqual([sha256('NOTES')]);
  expect(sorted(await serverTree(a.api))).toEqual(sorted(now));

  // The laptop gets the copies as the service renamed them, and both devices hold one tree.
  expect((await runCli(['sync', laptop, '--once'], a.env('laptop'))).code).toBe(0);
  expect(sorted(await readTree(laptop))).toEqual(sorted(now));
});

test('on exFAT, a remount (new inode numbers) moves nothing, and a rename after it loses nothing', async () => {
  const a = await account();
  // Mounted afresh, exfat-fuse numbers nodes from the same start again: in the order they are created
  // first, in the order the scan looks them up after the next remount, so the numbers change hands.
  await disk.remount();
  const stick = path.join(disk.root, `sync-${randomBytes(3).toString('hex')}`);
  await fs.mkdir(stick);
  // Files of one size and one mtime, so that a journal matching by a stale inode number would swap them.
  const when = new Date('2026-01-02T03:04:05Z');
  const names = ['f/one.txt', 'f/two.txt', 'g/three.txt', 'four.txt', 'five.txt'];
  for (const [i, name] of names.entries()) {
    await write(stick, name, `content ${i}`);
    await fs.utimes(path.join(stick, name), when, when);
  }
  expect((await runCli(['sync', stick, '--once'], a.env('stick'))).code).toBe(0);
  const synced = sorted(await serverTree(a.api));
  expect(synced).toEqual(sorted(await readTree(stick)));

  await disk.remount();
  const after = await runCli(['sync', stick, '--once'], a.env('stick'));
  expect(after.code).toBe(0);
  expect(after.stdout).toBe('');
  expect(sorted(await serverTree(a.api))).toEqual(synced);

  await disk.remount();
  await fs.rename(path.join(stick, 'f/one.txt'), path.join(stick, 'f/uno.txt'));
  await fs.rename(path.join(stick, 'g'), path.join(stick, 'h'));
  await fs.rename(path.join(stick, 'four.txt'), path.join(stick, 'f/four.txt'));
  const renamed = await runCli(['sync', stick, '--once'], a.env('stick'));
  expect(renamed.code).toBe(0);
  // Found again by their content: the files are renamed and moved on the service, not sent again.
  expect(renamed.stdout).toContain('renamed f/one.txt -> f/uno.txt');
  expect(renamed.stdout).toContain('moved four.txt -> f/four.txt');
  expect(renamed.stdout).toContain('moved g/three.txt -> h/three.txt');
  expect(renamed.stdout).not.toContain('uploaded');
  const local = sorted(await readTree(stick));
  expect(local.map(([p]) => p)).toEqual(['f', 'f/four.txt', 'f/two.txt', 'f/uno.txt', 'five.txt', 'h', 'h/three.txt']);
  expect(sorted(await serverTree(a.api))).toEqual(local);
  const still = await runCli(['sync', stick, '--once'], a.env('stick'));
  expect(still.stdout).toBe('');
});

test('on exFAT, a same-size edit that leaves size and mtime as the last sync read them is still sent', async () => {
  const a = await account();
  const stick = path.join(disk.root, `sync-${randomBytes(3).toString('hex')}`);
  await fs.mkdir(stick);
  // An mtime ahead of the clock (a device whose clock runs fast) is one the sync reads within a tick
  // of itself, like a file written in the same second as the sync on exFAT's whole-second mtimes.
  const ahead = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
  const file = path.join(stick, 'clock.txt');
  await fs.writeFile(file, 'version 1');
  await fs.utimes(file, ahead, ahead);
  expect((await runCli(['sync', stick, '--once'], a.env('stick'))).stdout).toContain('uploaded clock.txt');

  await fs.writeFile(file, 'version 2');
  await fs.utimes(file, ahead, ahead);
  expect((await fs.stat(file)).mtimeMs).toBe(ahead.getTime());
  const edited = await runCli(['sync', stick, '--once'], a.env('stick'));
  expect(edited.code).toBe(0);
  expect(edited.stdout).toContain('uploaded clock.txt');
  expect([...(await serverTree(a.api)).entries()]).toEqual([['clock.txt', sha256('version 2')]]);
});

test(".FILESYNCIGNORE and .Filesync from the server are not this disk's ignore file and state folder on exFAT: reported and left there", async () => {
  const a = await account();
  await a.api.uploadFile({ content: Buffer.from('*\n'), name: '.FILESYNCIGNORE' });
  const folder = (await a.api.syncOps([{ opId: '1', type: 'create', resourceId: randomBytes(16).toString('hex'), payload: { resourceType: 'folder', name: '.Filesync', parentId: null } }])).applied[0]!;
  await a.api.uploadFile({ content: Buffer.from('not state'), name: 'journal.db', folderId: folder.resourceId! });
  await a.api.uploadFile({ content: Buffer.from('ok'), name: 'ok.txt' });
  const stick = path.join(disk.root, `sync-${randomBytes(3).toString('hex')}`);
  await fs.mkdir(stick);
  await write(stick, '.filesyncignore', 'secret.txt\n');
  await write(stick, 'secret.txt', 'secret');
  await write(stick, 'mine.txt', 'mine');

  const res = await runCli(['sync', stick, '--once'], a.env('stick'));
  expect(res.code).toBe(0);
  expect(res.stdout).toContain('skipped: .FILESYNCIGNORE: ');
  expect(res.stdout).toContain('skipped: .Filesync: ');
  expect(res.stdout).toContain('downloaded ok.txt');
  expect(res.stdout).toContain('uploaded mine.txt');
  // The local ignore file is still this folder's own, and still in force; the state folder holds no server file.
  expect(await fs.readFile(path.join(stick, '.filesyncignore'), 'utf8')).toBe('secret.txt\n');
  expect(await fs.readFile(path.join(stick, '.filesync', 'journal.db')).then((b) => b.subarray(0, 15).toString())).toBe('SQLite format 3');
  const names = (await a.api.listFiles({ limit: 100 })).items.map((f) => f.name).sort();
  expect(names).toEqual(['.FILESYNCIGNORE', 'mine.txt', 'ok.txt']);
  const again = await runCli(['sync', stick, '--once'], a.env('stick'));
  expect(again.code).toBe(0);
  expect(again.stdout).not.toContain('uploaded');
});
