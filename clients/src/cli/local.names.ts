import { IGNORE_FILE, STATE_DIR } from './journal';

/**
 * What the local file system can hold, checked on every name and id the service sends before any
 * file-system call uses it: a name it cannot hold is reported and left on the server, never written
 * under another name, and never outside DIR.
 */
export interface LocalRules {
  platform: NodeJS.Platform;
  /** DIR's file system folds case (probed at start, see `foldsCase`). */
  caseInsensitive: boolean;
}

/** Longest name component in bytes (ext4, APFS, XFS, ...: 255). Windows counts UTF-16 units instead. */
const MAX_COMPONENT_BYTES = 255;
const WINDOWS_DEVICES = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/i;
// eslint-disable-next-line no-control-regex
const WINDOWS_INVALID = /[\\:*?"<>|\u0000-\u001f]/;

/**
 * Why `name` cannot be a local name under DIR (`atRoot`: directly in DIR), or null when it can.
 * `rules.platform` is a parameter so that Windows' rules are checked on any machine.
 */
export function localNameProblem(name: string, atRoot: boolean, rules: LocalRules): string | null {
  if (name === '') return 'is empty';
  if (name === '.' || name === '..') return `"${name}" is not a name but a folder's link`;
  if (name.includes('/')) return 'contains "/"';
  if (name.includes('\0')) return 'contains a NUL character';
  if (rules.platform === 'win32') {
    if (WINDOWS_INVALID.test(name)) return 'contains a character Windows does not allow in names (\\ : * ? " < > | or a control character)';
    if (WINDOWS_DEVICES.test(name)) return 'is a device name reserved by Windows';
    if (/[. ]$/.test(name)) return 'ends with a dot or a space, which Windows drops';
    if (name.length > 255) return 'is longer than the 255 characters Windows allows';
  } else if (Buffer.byteLength(name, 'utf8') > MAX_COMPONENT_BYTES) {
    return `is ${Buffer.byteLength(name, 'utf8')} bytes long, more than the ${MAX_COMPONENT_BYTES} the file system allows`;
  }
  const reserved = [STATE_DIR, IGNORE_FILE];
  if (rules.caseInsensitive || rules.platform === 'win32') {
    const folded = name.toLowerCase();
    const hit = reserved.find((r) => r === folded);
    if (hit) return `is "${hit}" on this case-insensitive file system, a name the client keeps for itself`;
  } else if (atRoot && reserved.includes(name)) return 'is a name the client keeps for itself';
  return null;
}

/** Resource ids (32 lowercase hex characters, as the service makes them); only such ids name local files. */
const ID = /^[0-9a-f]{32}$/;

export const isSafeId = (id: string): boolean => ID.test(id);

/** Throws unless `id` is safe to use in a local path (partial transfers, parking). */
export function assertSafeId(id: string): void {
  if (!isSafeId(id)) throw new UnsafeIdError(id);
}

export class UnsafeIdError extends Error {
  constructor(id: string) {
    super(`the service sent an id that is not 32 hex characters (${JSON.stringify(id.slice(0, 40))})`);
    this.name = 'UnsafeIdError';
  }
}
