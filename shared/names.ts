import { invalid } from './errors';

// Control characters: C0, DEL and C1.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Normalises a resource name to NFC and checks the contract's rules: 1 to 255 characters, no `/`,
 * no control character, not `.` or `..`. Returns the stored form or throws INVALID_REQUEST.
 */
export function normalizeName(raw: unknown, field = 'name'): string {
  if (typeof raw !== 'string') throw invalid(`${field} must be a string`);
  const name = raw.normalize('NFC');
  const length = [...name].length;
  if (length < 1 || length > 255) throw invalid(`${field} must be 1 to 255 characters`);
  if (name.includes('/')) throw invalid(`${field} must not contain '/'`);
  if (CONTROL.test(name)) throw invalid(`${field} must not contain control characters`);
  if (name === '.' || name === '..') throw invalid(`${field} must not be '.' or '..'`);
  return name;
}

/** The extension used for stored content: the name's last extension, lowercased, when it is [a-z0-9]{1,16}. */
export function extensionOf(name: string): string | null {
  const dot = name.lastIndexOf('.');
  if (dot <= 0 || dot === name.length - 1) return null;
  const ext = name.slice(dot + 1).toLowerCase();
  return /^[a-z0-9]{1,16}$/.test(ext) ? ext : null;
}
