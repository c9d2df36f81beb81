import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Writable } from 'node:stream';

/** A part header block longer than this is not looked at (busboy itself refuses far smaller ones). */
const MAX_HEADER_BLOCK = 16 * 1024;
const HEADER_END = Buffer.from('\r\n\r\n');

interface FilePartHead {
  typeDeclared: boolean;
  nameIsUtf8: boolean;
}

const heads = new WeakMap<object, FilePartHead>();

/** Whether the request's "file" part carried a Content-Type header of its own; undefined when unknown. */
export function fileTypeDeclared(req: object): boolean | undefined {
  return heads.get(req)?.typeDeclared;
}

/**
 * False when the "file" part's file name is not valid UTF-8 (raw in `filename=`, or percent-encoded
 * in `filename*=UTF-8''`). Busboy would hand such a name over with U+FFFD in place of the bad bytes,
 * silently renaming the file; the route refuses it instead.
 */
export function fileNameIsUtf8(req: object): boolean {
  return heads.get(req)?.nameIsUtf8 ?? true;
}

function extendedNameIsUtf8(head: string): boolean {
  const match = /;\s*filename\*\s*=\s*([^']*)'[^']*'([^;\r\n]*)/i.exec(head);
  if (!match || !/^utf-?8$/i.test(match[1]!.trim())) return true;
  try {
    decodeURIComponent(match[2]!.trim());
    return true;
  } catch {
    return false;
  }
}

function boundaryOf(req: IncomingMessage): string | undefined {
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(req.headers['content-type'] ?? '');
  return match?.[1] ?? match?.[2];
}

/**
 * multer's `streamHandler`: feeds the body to busboy as multer does, and on the side reads the
 * header block of the part named "file". Busboy reports a part without Content-Type as text/plain,
 * which would hide that the client declared no type at all; the service then looks the type
 * up from the extension. It also checks that the part's header block, and so its file name, is valid
 * UTF-8. Only header blocks are kept in memory, and the watch ends at that part.
 */
export function feedNotingFileType(req: IncomingMessage, busboy: Writable): void {
  const boundary = boundaryOf(req);
  if (boundary) {
    const delimiter = Buffer.from(`\r\n--${boundary}`);
    // The first delimiter has no CRLF before it; pretend it has one.
    let pending = Buffer.from('\r\n');
    const stop = () => req.off('data', scan);
    const scan = (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const at = pending.indexOf(delimiter);
        if (at < 0) {
          pending = pending.subarray(Math.max(0, pending.length - delimiter.length));
          return;
        }
        const end = pending.indexOf(HEADER_END, at + delimiter.length);
        if (end < 0) {
          pending = pending.subarray(at);
          if (pending.length > MAX_HEADER_BLOCK) stop();
          return;
        }
        const raw = pending.subarray(at + delimiter.length, end);
        const head = raw.toString('latin1');
        if (/^content-disposition:[^\r\n]*;\s*name="?file"?\s*(;|\r|$)/im.test(head) && /;\s*filename\*?=/i.test(head)) {
          heads.set(req, { typeDeclared: /^content-type\s*:/im.test(head), nameIsUtf8: isUtf8(raw) && extendedNameIsUtf8(head) });
          stop();
          return;
        }
        pending = pending.subarray(end + HEADER_END.length);
      }
    };
    req.on('data', scan);
  }
  req.pipe(busboy);
}
