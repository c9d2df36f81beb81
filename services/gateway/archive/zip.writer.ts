import type { Response } from 'express';
import { crc32 } from 'node:zlib';
import type { ArchiveFile } from '../../../shared/db/repositories/link.repository';
import type { ContentStore } from '../../../shared/storage/content.store';
import { ContentAhead, type Fetch, type Piece } from './content.ahead';
import { ZipEncoder, type ZipOptions } from './zip.format';

/**
 * Files read from the database per query while an archive is written: on a busy database a query
 * takes as long as writing hundreds of small files, so few of them, each asked for a page ahead.
 */
const PAGE = 1000;
/**
 * A folder's first page: small, so its first bytes leave soon. Each next page is GROWTH times the one
 * before (up to PAGE), so that it is read while the one before is written: a full page right after
 * the first takes longer to arrive than the first takes to write, and the writer would wait for it.
 */
const FIRST_PAGE = 64;
const GROWTH = 4;
/** Bytes queued on the response beyond which the writer waits for it to drain. */
const HELD_BYTES = 10 * 1024 * 1024;

/** A file of an archive: its content and its path inside the ZIP. */
export interface ArchiveEntry extends Omit<ArchiveFile, 'id' | 'name' | 'crc32'> {
  path: string;
  /** The content's CRC-32 when recorded as it was written: the entry then needs no pass over its bytes. */
  crc32?: number | null;
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
  if (!name.includes('\\') && name.charCodeAt(1) !== 0x3a) return name;
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
    // The next page is asked for as soon as a full one arrives, so its query overlaps the writing.
    let limit = FIRST_PAGE;
    let next: ReturnType<ArchiveTree['filesAfter']> | undefined = links.filesAfter(userId, id, null, limit);
    while (next) {
      const page: (ArchiveFile & { nameKey: Buffer })[] = await next;
      const last = page[page.length - 1];
      const full = page.length === limit;
      limit = Math.min(PAGE, limit * GROWTH);
      next = full ? links.filesAfter(userId, id, { name: last!.nameKey, id: last!.id }, limit) : undefined;
      // A walk stopped early still settles the query it started.
      next?.catch(() => undefined);
      for (const file of page) yield { sizeBytes: file.sizeBytes, storageKey: file.storageKey, updatedAt: file.updatedAt, crc32: file.crc32, path: prefix + segment(file.name) };
    }
    const subfolders = await links.subfolders(userId, id);
    // Popped from the end: pushed in reverse, they are written in name order.
    for (let i = subfolders.length - 1; i >= 0; i--) folders.push({ id: subfolders[i]!.id, prefix: `${prefix}${segment(subfolders[i]!.name)}/` });
  }
}

/**
 * Streams `entries` as one ZIP, entries stored as they are: content is mostly compressed already,
 * and deflating would cost the gateway's CPU, not the network. The records are written by hand
 * (zip.format.ts): the libraries measured (yazl, zip-stream, client-zip, @zip.js/zip.js) compute
 * CRC-32 in JavaScript and pass each entry through streams of their own, 250 ms to 2.9 s per 1,000
 * stored 100 KiB entries where Node's native CRC-32 takes 15 ms, and fflate, which takes the
 * caller's CRC, writes no ZIP64. Here the CRC is the one recorded when the content was written
 * (content_crc32), else the native one, taken where the bytes are read (a reading thread) or as
 * they pass, and each file's bytes are written straight to
 * the response from the reads ahead (content.ahead.ts), which bound the archive's memory whatever
 * the folder's size. A failure after the headers left cuts the response, so the client sees a
 * truncated archive, never a complete-looking wrong one.
 */
export function sendArchive(res: Response, store: ContentStore, entries: AsyncIterable<ArchiveEntry>, options: ZipOptions = {}): Promise<void> {
  return prepareArchive(store, entries, options).send(res);
}

/** An archive whose files are being listed and read ahead: `send` writes it, `cancel` drops it unsent. */
export interface PreparedArchive {
  /** Writes the archive; its end (the central directory) waits for `endAfter`, and its failure cuts it. */
  send(res: Response, endAfter?: Promise<void>): Promise<void>;
  cancel(): void;
}

/**
 * Starts listing and reading `entries` ahead of the response, so that a caller with a check still
 * to make (a link's download count) overlaps it with the archive's first queries and reads.
 */
export function prepareArchive(store: ContentStore, entries: AsyncIterable<ArchiveEntry>, options: ZipOptions = {}): PreparedArchive {
  const zip = new ZipEncoder(options);
  const ahead = new ContentAhead(store, entries, (entry) => zip.frame(entry.path, entry.sizeBytes, entry.crc32));
  return { send: (res, endAfter) => writeArchive(res, zip, ahead, endAfter), cancel: () => ahead.stop() };
}

async function writeArchive(res: Response, zip: ZipEncoder, ahead: ContentAhead<ArchiveEntry>, endAfter?: Promise<void>): Promise<void> {
  let failed = false;
  let drained: (() => void) | undefined;
  const fail = () => {
    if (failed) return;
    failed = true;
    ahead.stop();
    res.destroy();
    drained?.();
  };
  const onDrain = () => drained?.();
  res.on('close', () => {
    if (!res.writableFinished) fail();
  });
  res.on('drain', onDrain);
  // Writes made in one turn of the event loop leave as one writev.
  let corked = false;
  const write = (bytes: Buffer, done?: (err?: Error | null) => void) => {
    if (!corked) {
      corked = true;
      res.cork();
      process.nextTick(() => {
        corked = false;
        res.uncork();
      });
    }
    res.write(bytes, done);
  };
  // Whole entries framed in place lie one after another in a slab: those read by the time the writer
  // reaches them leave as one write, whose memory returns once the socket has its bytes. A failed
  // write cuts the archive.
  let span: { memory: ArrayBufferLike; start: number; end: number; pieces: Piece[] } | undefined;
  const flush = () => {
    if (!span) return;
    const { memory, start, end, pieces } = span;
    span = undefined;
    write(Buffer.from(memory, start, end - start), (err) => (err ? fail() : pieces.forEach((p) => p.release())));
  };
  const send = (bytes: Buffer, piece: Piece) => {
    if (span && span.memory === bytes.buffer && span.end === bytes.byteOffset) {
      span.end += bytes.length;
      span.pieces.push(piece);
      return;
    }
    flush();
    span = { memory: bytes.buffer, start: bytes.byteOffset, end: bytes.byteOffset + bytes.length, pieces: [piece] };
  };
  // What is read already is taken without waiting (not even a microtask's); before a wait, what is held goes out.
  const nextPiece = (fetch: Fetch<ArchiveEntry>) => {
    const next = fetch.next();
    if (next instanceof Promise) flush();
    return next;
  };
  try {
    for (;;) {
      let fetch = ahead.take();
      if (!fetch) {
        flush();
        fetch = await ahead.next();
      }
      if (failed || !fetch) break;
      const { path, sizeBytes, updatedAt } = fetch.entry;
      const known = fetch.entry.crc32 ?? undefined;
      const first = nextPiece(fetch);
      let piece = first instanceof Promise ? await first : first;
      if (failed) break;
      if (piece?.framed && piece.bytes.length === sizeBytes) {
        // Read whole with room around it: header, bytes and descriptor leave together.
        const { framed } = piece;
        const head = framed.length - sizeBytes - zip.frame(path, sizeBytes, known).tail;
        zip.begin(path, sizeBytes, updatedAt, framed.subarray(0, head), known);
        zip.end(known ?? piece.crc32 ?? crc32(piece.bytes), framed.subarray(head + sizeBytes));
        send(framed, piece);
        const after = nextPiece(fetch);
        if ((after instanceof Promise ? await after : after) !== undefined) throw new Error(`${path}: more bytes than its size`);
      } else {
        flush();
        write(zip.begin(path, sizeBytes, updatedAt, undefined, known));
        let crc = 0;
        let written = 0;
        while (piece && !failed) {
          if (known === undefined) crc = piece.crc32 !== undefined && written === 0 ? piece.crc32 : crc32(piece.bytes, crc);
          written += piece.bytes.length;
          const sent = piece;
          write(piece.bytes, (err) => (err ? fail() : sent.release()));
          const next = nextPiece(fetch);
          piece = next instanceof Promise ? await next : next;
        }
        if (failed) break;
        if (written !== sizeBytes) throw new Error(`${path}: ${written} bytes read of ${sizeBytes}`);
        const descriptor = zip.end(known ?? crc);
        if (descriptor.length > 0) write(descriptor);
      }
      ahead.written();
      // Headers and descriptors are not counted in the reads' bound: a slow client holds the writer here.
      if (res.writableLength > HELD_BYTES) {
        flush();
        while (!failed && res.writableLength > HELD_BYTES) await new Promise<void>((resolve) => (drained = resolve));
      }
    }
    if (failed) return;
    flush();
    await endAfter;
    if (failed) return;
    for (const bytes of zip.finish()) write(bytes);
    ahead.finish();
    res.end();
  } catch {
    fail();
  } finally {
    res.off('drain', onDrain);
  }
}
