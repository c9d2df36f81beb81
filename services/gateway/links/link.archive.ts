import type { Response } from 'express';
import yazl from 'yazl';
import type { ArchiveFile, LinkRepository } from '../../../shared/db/repositories/link.repository';
import type { ContentStore } from '../../../shared/storage/content.store';

/** Files read from the database per query while an archive is written. */
const PAGE = 200;
/** Entries handed to the ZIP writer ahead of the one it is reading: the listing stays this far ahead, no further. */
const AHEAD = 16;

interface ArchiveEntry extends ArchiveFile {
  path: string;
}

/**
 * A name as a path segment every unzipper reads as one: a backslash is a separator to some of them
 * (and to the ZIP writer), and `X:` at the start reads as a drive; both become `_`.
 */
function segment(name: string): string {
  return name.replace(/\\/g, '_').replace(/^([A-Za-z]):/, '$1_');
}

/**
 * The active files of a subtree, depth first, each under its path relative to the root (`a.txt`,
 * `sub/b.txt`), read a page at a time: a folder of any size is never listed whole.
 */
async function* walk(links: LinkRepository, userId: string, rootId: string): AsyncGenerator<ArchiveEntry> {
  const folders: { id: string; prefix: string }[] = [{ id: rootId, prefix: '' }];
  while (folders.length > 0) {
    const { id, prefix } = folders.pop()!;
    let after: { name: Buffer; id: string } | null = null;
    for (;;) {
      const page = await links.filesAfter(userId, id, after, PAGE);
      for (const file of page) yield { ...file, path: prefix + segment(file.name) };
      if (page.length < PAGE) break;
      const last = page[page.length - 1]!;
      after = { name: last.nameKey, id: last.id };
    }
    const subfolders = await links.subfolders(userId, id);
    // Popped from the end: pushed in reverse, they are written in name order.
    for (let i = subfolders.length - 1; i >= 0; i--) folders.push({ id: subfolders[i]!.id, prefix: `${prefix}${segment(subfolders[i]!.name)}/` });
  }
}

/**
 * Streams a folder as one ZIP (yazl, entries stored as they are: content is mostly compressed already,
 * and deflating would cost the gateway's CPU, not the network). Nothing is held but the entries'
 * names for the central directory: each file's bytes flow from the store to the client as the client
 * reads, the listing runs at most AHEAD entries in front of the writer, and the response's
 * backpressure holds them all. A failure after the headers left cuts the response, so the client
 * sees a truncated archive, never a complete-looking wrong one.
 */
export async function sendArchive(res: Response, store: ContentStore, links: LinkRepository, userId: string, rootId: string): Promise<void> {
  const zip = new yazl.ZipFile();
  let started = 0;
  let added = 0;
  let failed = false;
  let wake: (() => void) | undefined;
  // The content being read: a cut response must release it (an object store's socket), not leave it paused.
  let reading: NodeJS.ReadableStream & { destroy?: () => void } | undefined;
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
    for await (const file of walk(links, userId, rootId)) {
      while (!failed && added - started >= AHEAD) await new Promise<void>((resolve) => (wake = resolve));
      if (failed) return;
      added++;
      zip.addReadStreamLazy(file.path, { mtime: file.updatedAt, compress: false, size: file.sizeBytes }, (cb) => {
        started++;
        nudge();
        store
          .open(file.storageKey)
          .then((handle) => handle.read())
          .then(
            (stream) => {
              reading = stream;
              if (failed) stream.destroy();
              else cb(null, stream);
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
