import { invalid } from './errors';

// Control characters: C0, DEL and C1.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

// A UTF-16 surrogate not paired with its other half: no character at all, so not storable as text.
const LONE_SURROGATE = /\p{Cs}/u;
// Bidirectional embeddings, overrides and isolates: they make "evil\u202Etxt.exe" display as another name.
const BIDI_CONTROL = /[\u202a-\u202e\u2066-\u2069]/;

/**
 * Normalises a resource name to NFC and checks the name rules (docs/SYNC-CLIENT.md, section 8): 1 to 255 characters, no `/`,
 * no control character (bidi controls included), no lone surrogate, not `.` or `..`. Returns the
 * stored form or throws INVALID_REQUEST. Every name, from an upload or a sync op, passes here.
 */
export function normalizeName(raw: unknown, field = 'name'): string {
  if (typeof raw !== 'string') throw invalid(`${field} must be a string`);
  if (LONE_SURROGATE.test(raw)) throw invalid(`${field} is not valid Unicode text (a lone surrogate)`);
  const name = raw.normalize('NFC');
  const length = [...name].length;
  if (length < 1 || length > 255) throw invalid(`${field} must be 1 to 255 characters`);
  if (name.includes('/')) throw invalid(`${field} must not contain '/'`);
  if (CONTROL.test(name)) throw invalid(`${field} must not contain control characters`);
  if (BIDI_CONTROL.test(name)) throw invalid(`${field} must not contain bidirectional control characters (U+202A-202E, U+2066-2069)`);
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
