import { mkdtemp, open, readFile, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FlushBehind, FolderFlushes, openFor, syncFile, syncFolder } from '../../shared/storage/local/durable';

/** A folder sync that records its calls and ends when the test says so. */
function scriptedSync() {
  const calls: { dir: string; end: (err?: Error) => void }[] = [];
  const sync = (dir: string) => new Promise<void>((resolve, reject) => calls.push({ dir, end: (err) => (err ? reject(err) : resolve()) }));
  return { calls, sync };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('FolderFlushes', () => {
  it('flushes a folder once for the renames that ask together, and apart for another folder', async () => {
    const { calls, sync } = scriptedSync();
    const flushes = new FolderFlushes(sync);
    const waits = [flushes.flush('/a'), flushes.flush('/a'), flushes.flush('/a'), flushes.flush('/b')];
    await turn();
    expect(calls.map((c) => c.dir).sort()).toEqual(['/a', '/b']);
    for (const c of calls) c.end();
    await Promise.all(waits);
  });

  it('makes a caller that asks during a flush wait for the next one, shared by everyone who asks meanwhile', async () => {
    const { calls, sync } = scriptedSync();
    const flushes = new FolderFlushes(sync);
    let firstDone = false;
    const first = flushes.flush('/a').then(() => (firstDone = true));
    await turn();
    expect(calls).toHaveLength(1);
    // These renames may have ended after the running flush began: it does not cover them.
    let laterDone = 0;
    const later = [flushes.flush('/a'), flushes.flush('/a')].map((p) => p.then(() => laterDone++));
    await turn();
    expect(calls).toHaveLength(1);
    calls[0]!.end();
    await first;
    expect(firstDone).toBe(true);
    expect(laterDone).toBe(0);
    await turn();
    expect(calls).toHaveLength(2);
    calls[1]!.end();
    await Promise.all(later);
    expect(laterDone).toBe(2);
  });

  it('fails every caller of a flush that failed, and flushes afresh for the next caller', async () => {
    const { calls, sync } = scriptedSync();
    const flushes = new FolderFlushes(sync);
    const waits = [flushes.flush('/a'), flushes.flush('/a')];
    await turn();
    calls[0]!.end(new Error('EIO'));
    await expect(waits[0]).rejects.toThrow('EIO');
    await expect(waits[1]).rejects.toThrow('EIO');
    const again = flushes.flush('/a');
    await turn();
    expect(calls).toHaveLength(2);
    calls[1]!.end();
    await expect(again).resolves.toBeUndefined();
  });
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'filesync-durable-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('syncFile and syncFolder', () => {
  it('flush a real file and folder, and refuse what is not there', async () => {
    await writeFile(path.join(dir, 'f'), 'bytes');
    await expect(syncFile(path.join(dir, 'f'))).resolves.toBeUndefined();
    await expect(syncFolder(dir)).resolves.toBeUndefined();
    await expect(new FolderFlushes().flush(dir)).resolves.toBeUndefined();
    await expect(syncFile(path.join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(new FolderFlushes().flush(path.join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('FlushBehind', () => {
  const pieces = (n: number, size: number) => Array.from({ length: n }, (_, i) => Buffer.alloc(size, i));

  it('passes the bytes on unchanged and flushes every 16 MiB behind them', async () => {
    const file = path.join(dir, 'staged');
    const handle = await open(file, 'wx');
    let flushes = 0;
    const datasync = handle.datasync.bind(handle);
    handle.datasync = () => {
      flushes++;
      return datasync();
    };
    const input = pieces(40, 1024 * 1024);
    await pipeline(Readable.from(input), new FlushBehind(handle), handle.createWriteStream({ flush: true }));
    expect(flushes).toBe(2);
    expect((await readFile(file)).equals(Buffer.concat(input))).toBe(true);
  });

  it('counts from the offset the writes start at, so that a file written in several requests is flushed all the same', async () => {
    const file = path.join(dir, 'resumed');
    await writeFile(file, Buffer.alloc(0));
    let flushes = 0;
    let offset = 0;
    // Eight requests of 5 MiB: 40 MiB crosses two 16 MiB marks.
    for (let i = 0; i < 8; i++) {
      const handle = await open(file, 'r+');
      const datasync = handle.datasync.bind(handle);
      handle.datasync = () => {
        flushes++;
        return datasync();
      };
      await pipeline(Readable.from(pieces(5, 1024 * 1024)), new FlushBehind(handle, offset), handle.createWriteStream({ start: offset }));
      offset += 5 * 1024 * 1024;
    }
    expect(flushes).toBe(2);
    expect((await readFile(file)).length).toBe(offset);
  });

  it('fails the stream at its end when a flush behind the writes failed', async () => {
    const handle = { datasync: () => Promise.reject(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' })) } as unknown as FileHandle;
    const sink: Buffer[] = [];
    const writable = new Writable({ write: (c: Buffer, _e, cb) => (sink.push(c), cb()) });
    await expect(pipeline(Readable.from(pieces(17, 1024 * 1024)), new FlushBehind(handle), writable)).rejects.toMatchObject({ code: 'EIO' });
  });
});

describe('openFor', () => {
  it('opens the file, and destroys the source when it cannot, as a pipeline would', async () => {
    const source = Readable.from([Buffer.from('bytes')]);
    const handle = await openFor(source, path.join(dir, 'opened'), 'wx');
    await handle.close();
    expect(source.destroyed).toBe(false);
    const other = Readable.from([Buffer.from('bytes')]);
    await expect(openFor(other, path.join(dir, 'opened'), 'wx')).rejects.toMatchObject({ code: 'EEXIST' });
    expect(other.destroyed).toBe(true);
  });
});

