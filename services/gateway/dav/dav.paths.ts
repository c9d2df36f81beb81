import { normalizeName } from '../../../shared/names';
import { DavError } from './dav.errors';

/** Where the WebDAV tree is mounted. */
export const DAV_MOUNT = '/dav';

/** A path in the caller's tree: its segments (names, NFC) and the key locks are kept under. */
export interface DavPath {
  segments: string[];
  /** `/a/b`; the root is ``. */
  key: string;
}

export const pathKey = (segments: string[]): string => segments.map((s) => `/${s}`).join('');

export const pathOf = (segments: string[]): DavPath => ({ segments, key: pathKey(segments) });

export const parentOf = (p: DavPath): DavPath => pathOf(p.segments.slice(0, -1));

/**
 * Reads the path of a request target under the mount: each segment percent-decoded as UTF-8 and
 * checked as a name (NFC, the API's rules), so `caf%C3%A9` and `cafe%CC%81` name the same resource.
 * Empty segments (`//`, a trailing slash) are ignored; a fragment or a query is refused or ignored.
 */
export function parseDavPath(rawPath: string): DavPath {
  if (rawPath.includes('#')) throw new DavError(400, 'a request target has no fragment');
  const pathname = rawPath.split('?')[0]!;
  if (pathname !== DAV_MOUNT && !pathname.startsWith(`${DAV_MOUNT}/`)) throw new DavError(404, 'outside the WebDAV tree');
  const segments: string[] = [];
  for (const raw of pathname.slice(DAV_MOUNT.length).split('/')) {
    if (raw === '') continue;
    let decoded: string;
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      throw new DavError(400, 'the path is not valid percent-encoded UTF-8');
    }
    try {
      segments.push(normalizeName(decoded, 'path segment'));
    } catch (err) {
      throw new DavError(400, (err as Error).message);
    }
  }
  return pathOf(segments);
}

/**
 * The path of a Destination header (RFC 4918 10.3): an absolute URI on this server or an absolute
 * path. Another host is 502 (RFC 4918 9.8.4: the server cannot copy elsewhere).
 */
export function parseDestination(header: string | undefined, host: string | undefined): DavPath {
  if (!header) throw new DavError(400, 'Destination is required');
  let pathname: string;
  if (header.startsWith('/')) pathname = header;
  else {
    let url: URL;
    try {
      url = new URL(header);
    } catch {
      throw new DavError(400, 'Destination is not a URI');
    }
    if (host && url.host.toLowerCase() !== host.toLowerCase()) throw new DavError(502, 'Destination is on another server');
    pathname = url.pathname;
  }
  return parseDavPath(pathname);
}

/** The href of a path: each segment percent-encoded, collections with a trailing slash. */
export function hrefOf(segments: string[], collection: boolean): string {
  const encoded = segments.map((s) => encodeURIComponent(s)).join('/');
  if (segments.length === 0) return `${DAV_MOUNT}/`;
  return `${DAV_MOUNT}/${encoded}${collection ? '/' : ''}`;
}

/** True when `inner` is `outer` or below it. */
export const isWithin = (inner: string, outer: string): boolean => inner === outer || inner.startsWith(`${outer}/`);
