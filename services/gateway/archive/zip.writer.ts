import type { Response } from 'express';
import { PassThrough } from 'node:stream';
import yazl from 'yazl';
import type { ArchiveFile } from '../../../shared/db/repositories/link.repository';
import type { ContentStore } from '../../../shared/storage/content.store';

/** Files read from the database per query while an archive is written. */
const PAGE = 200;
/** Entries handed to the ZIP writer ahead of the one it is reading: the listing stays this far ahead, no further. */
const AHEAD = 16;
/** A file up to this size is read whole ahead of its turn; a larger one streams when its turn comes. */
const SMALL_FILE = 1024 * 1024;
/** Bytes of small files read ahead of the writer at most: the archive's memory, whatever the folder's size. */
const AHEAD_BYTES = 8 * 1024 * 1024;

/** A file of an archive: its content and its path inside the ZIP. */
export interface ArchiveEntry extends Omit<ArchiveFile, 'id' | 'name'> {
  path: string;
}

/** The reads a subtree's walk needs, each scoped to the owner (LinkRepository has them). */
export interface ArchiveTree {
  /** Up to `limit` active files with content in the folder, after `after` in (name key, id) order. */
  filesAfter(userId: string, folderId: string, after: { name: Buffer; id: string } | null, limit: number): Promise<(ArchiveFile & { nameKey: Buffer })[]>;
  /** The folder's active subfolders, by name. */
  subfolders(userId: string, folderId: string): Promise<{ id: string; name: string }[]>;
}

/**
 * A name as a path segment every unzipper reads as one: a backslash is a separator to some of them
 * (and to the ZIP writer), and `X:` at the start reads as a drive; both become `_`.
 */
export function segment(name: string): string {
  return name.replace(/\\/g, '_').replace(/^([A-Za-z]):/, '$1_');
}

/**
 * The active files of a subtree, depth first, each under its path relative to the root after
 * `prefix` (`a.txt`, `sub/b.txt`), read a page at a time: a folder of any size is never listed whole.
 */
export async function* walkFolder(links: ArchiveTree, userId: string, rootId: string, prefix = ''): AsyncGenerator<ArchiveEntry> {
  const folders: { id: string; prefix: string }[] = [{ id: rootId, prefix }];
  while (folders.length > 0) {
    const { id, prefix } = folders.pop()!;
    let after: { name: Buffer; id: string } | null = null;
    for (;;) {
      const page = await links.filesAfter(userId, id, after, PAGE);
      for (const file of page) yield { sizeBytes: file.sizeBytes, storageKey: file.storageKey, updatedAt: file.updatedAt, path: prefix + segment(file.name) };
      if (page.length < PAGE) break;
      const last = page[page.length - 1]!;
      after = { name: last.nameKey, id: last.id };
    }
    const subfolders = await links.subfolders(userId, id);
    // Popped from the end: pushed in reverse, they are written in name order.
    for (let i = subfolders.length - 1; i >= 0; i--) folders.push({ id: subfolders[i]!.id, prefix: `${prefix}${segment(subfolders[i]!.name)}/` });
  }
}

type Content = NodeJS.ReadableStream & { destroy?: () => void };

/** The whole content of a stored object of `size` bytes, asked for as one range (no read past its end). */
async function readWhole(store: ContentStore, key: string, size: number): Promise<Buffer> {
  const handle = await store.open(key);
  const chunks: Buffer[] = [];
  for await (const chunk of await handle.read(size > 0 ? { start: 0, end: size - 1 } : undefined)) chunks.push(chunk as Buffer);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/**
 * Streams `entries` as one ZIP (yazl, entries stored as they are: content is mostly compressed already,
 * and deflating would cost the gateway's CPU, not the network). Nothing is held but the entries'
 * names for the central directory and the small files read ahead: a folder of many small files is
 * bound by the store's round trips (open, read) rather than by bytes, so files up to SMALL_FILE are
 * read whole up to AHEAD entries and AHEAD_BYTES in front of the writer, overlapping those trips with
 * the writing; a larger file flows from the store to the client when its turn comes. The response's
 * backpressure holds it all. A failure after the headers left cuts the response, so the client
 * sees a truncated archive, never a complete-looking wrong one.
 */
export async function sendArchive(res: Response, store: ContentStore, entries: AsyncIterable<ArchiveEntry>): Promise<void> {
  const zip = new yazl.ZipFile();
  let started = 0;
  let added = 0;
  let aheadBytes = 0;
  let failed = false;
  let wake: (() => void) | undefined;
  // The content being read: a cut response must release it (an object store's socket), not leave it paused.
  let reading: Content | undefined;
  const nudge = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const fail = () => {
    if (failed) return;
    failed = true;
    reading?.destroy?.();
    res.destroy();
    nudge();
  };
  zip.on('error', fail);
  zip.outputStream.on('error', fail);
  res.on('close', () => {
    if (!res.writableFinished) fail();
  });
  zip.outputStream.pipe(res);
  try {
    for await (const file of entries) {
      const small = file.sizeBytes <= SMALL_FILE;
      while (!failed && (added - started >= AHEAD || (small && aheadBytes + file.sizeBytes > AHEAD_BYTES && added > started))) {
        await new Promise<void>((resolve) => (wake = resolve));
      }
      if (failed) return;
      added++;
      let content: Promise<Content> | undefined;
      if (small) {
        aheadBytes += file.sizeBytes;
        const bytes = readWhole(store, file.storageKey, file.sizeBytes);
        // A failure is the writer's to report when it reaches this entry (or nobody's, if it never does).
        bytes.catch(() => undefined);
        content = bytes.then((b) => new PassThrough().end(b) as PassThrough);
      }
      zip.addReadStreamLazy(file.path, { mtime: file.updatedAt, compress: false, size: file.sizeBytes }, (cb) => {
        started++;
        if (small) aheadBytes -= file.sizeBytes;
        nudge();
        (content ??= store.open(file.storageKey).then((handle) => handle.read(file.sizeBytes > 0 ? { start: 0, end: file.sizeBytes - 1 } : undefined))).then(
          (stream) => {
            reading = stream;
            if (failed) stream.destroy?.();
            else cb(null, stream as NodeJS.ReadableStream as never);
          },
          (err: Error) => cb(err, undefined as never),
        );
      });
    }
    if (!failed) zip.end();
  } catch {
    fail();
  }
}
