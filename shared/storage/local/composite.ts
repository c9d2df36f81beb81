import { closeSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { ContentNotFoundError, type ByteRange, type ContentHandle } from '../content.store';
import { closeFd, openFd, READ_CHUNK, readAt, writeDescriptor } from './buffer.pool';

/*
 * Composite content on the local driver: a folder at the content's key whose pieces file lists, in
 * order, ranges of the files beside it. Those files are hard links to the files of the content a
 * delta copied from (docs/ARCHITECTURE.md, "Delta uploads on local disk"), plus one file of the new
 * bytes. A link keeps its bytes for as long as any content names them, whatever happens to the
 * content they came from, so removing a composite or its base is removing names, with no counts to
 * keep; and content files are never written after they are placed, so the linked bytes never change.
 */

/** The file listing a composite's pieces; a folder at a content key without it is not content. */
export const PIECES_FILE = 'pieces.json';

export interface CompositePiece {
  /** A file of the composite's folder. */
  file: string;
  start: number;
  length: number;
}

export interface CompositeManifest {
  size: number;
  pieces: CompositePiece[];
}

const PIECE_FILE_NAME = /^[a-z0-9]{1,16}$/;

const isNotFound = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/** The manifest of the composite at `dir`, checked: pieces that cover its size exactly, in files of the folder. */
export async function readManifest(dir: string, key: string): Promise<CompositeManifest> {
  let text: string;
  try {
    text = await fs.readFile(path.join(dir, PIECES_FILE), 'utf8');
  } catch (err) {
    throw isNotFound(err) ? new ContentNotFoundError(key) : err;
  }
  const manifest = JSON.parse(text) as CompositeManifest;
  let total = 0;
  for (const p of manifest.pieces) {
    if (!PIECE_FILE_NAME.test(p.file) || !Number.isSafeInteger(p.start) || !Number.isSafeInteger(p.length) || p.start < 0 || p.length <= 0) {
      throw new Error(`${key}: a composite's piece is malformed`);
    }
    total += p.length;
  }
  if (total !== manifest.size) throw new Error(`${key}: a composite's pieces do not add up to its size`);
  return manifest;
}

/** Whether the folder `dir` is a composite (has its pieces file). */
export const isComposite = (dir: string): Promise<boolean> =>
  fs.access(path.join(dir, PIECES_FILE)).then(
    () => true,
    () => false,
  );

/** The pieces of `manifest` that hold bytes [start, end), cut to that range. */
export function piecesOf(manifest: CompositeManifest, start: number, end: number): CompositePiece[] {
  const out: CompositePiece[] = [];
  let at = 0;
  for (const p of manifest.pieces) {
    const from = Math.max(start, at);
    const to = Math.min(end, at + p.length);
    if (from < to) out.push({ file: p.file, start: p.start + (from - at), length: to - from });
    at += p.length;
    if (at >= end) break;
  }
  return out;
}

/**
 * A handle on the composite at `dir`, as the local driver's handle on a file: every piece's file
 * is opened at once, so the handle reads the bytes the key held when it was opened, even if the
 * composite is removed meanwhile.
 */
export async function openComposite(dir: string, key: string): Promise<ContentHandle> {
  const manifest = await readManifest(dir, key);
  const fds = new Map<string, number>();
  try {
    for (const p of manifest.pieces) {
      if (!fds.has(p.file)) fds.set(p.file, await openFd(path.join(dir, p.file)));
    }
  } catch (err) {
    for (const fd of fds.values()) await closeFd(fd);
    throw isNotFound(err) ? new ContentNotFoundError(key) : err;
  }
  let closed = false;
  const closeAll = () => {
    if (closed) return;
    closed = true;
    for (const fd of fds.values()) closeSync(fd);
  };
  const segments = (range?: ByteRange) => piecesOf(manifest, range?.start ?? 0, range ? range.end + 1 : manifest.size);
  async function* bytesOf(range?: ByteRange): AsyncGenerator<Buffer> {
    try {
      for (const s of segments(range)) {
        const fd = fds.get(s.file)!;
        for (let done = 0; done < s.length; ) {
          const buf = Buffer.allocUnsafe(Math.min(READ_CHUNK, s.length - done));
          const n = await readAt(fd, buf, 0, buf.length, s.start + done);
          if (n === 0) throw new Error(`${key}: a piece is shorter than its manifest says`);
          done += n;
          yield n === buf.length ? buf : buf.subarray(0, n);
        }
      }
    } finally {
      closeAll();
    }
  }
  return {
    size: manifest.size,
    read: async (range?: ByteRange) => Readable.from(bytesOf(range), { objectMode: false }),
    writeTo: async (dest, range) => {
      try {
        for (const s of segments(range)) {
          if (dest.destroyed) return;
          await writeDescriptor(fds.get(s.file)!, dest, s.start, s.start + s.length, READ_CHUNK);
        }
      } finally {
        closeAll();
      }
    },
    readInto: async (buf, position) => {
      let filled = 0;
      for (const s of segments({ start: position, end: Math.min(manifest.size, position + buf.length) - 1 })) {
        for (let done = 0; done < s.length; ) {
          const n = await readAt(fds.get(s.file)!, buf, filled, s.length - done, s.start + done);
          if (n === 0) throw new Error(`${key}: a piece is shorter than its manifest says`);
          done += n;
          filled += n;
        }
      }
      return filled;
    },
    close: async () => closeAll(),
  };
}

/** Size and age of the composite at `dir`: its manifest's size, and the folder's mtime. */
export async function statComposite(dir: string, key: string): Promise<{ size: number; modifiedAt: Date }> {
  const [manifest, stat] = await Promise.all([readManifest(dir, key), fs.stat(dir)]);
  return { size: manifest.size, modifiedAt: stat.mtime };
}

/**
 * Removes the composite at `dir` by moving it to `away` (in the staging folder, on the same file
 * system) first: the key is gone in one step, and a removal cut short leaves the rest to the sweep
 * of old staging entries.
 */
export async function removeComposite(dir: string, away: string): Promise<void> {
  try {
    await fs.rename(dir, away);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    // Gone already, or the staging folder is (removed by hand): made again for the move.
    if (!(await isComposite(dir))) return;
    await fs.mkdir(path.dirname(away), { recursive: true });
    await fs.rename(dir, away);
  }
  await fs.rm(away, { recursive: true, force: true });
}

/** As the whole reads of small files: as much of the composite as `into` holds, with its size and, when asked, the CRC-32 of the bytes read. */
export async function readComposite(dir: string, key: string, into: Buffer, withCrc: boolean): Promise<{ size: number; read: number; crc32?: number }> {
  const handle = await openComposite(dir, key);
  try {
    const read = await handle.readInto!(into, 0);
    return { size: handle.size, read, ...(withCrc ? { crc32: crc32(into.subarray(0, read)) } : {}) };
  } finally {
    await handle.close();
  }
}
