import { isLosslessNumber, LosslessNumber, parse, stringify } from 'lossless-json';

export { isLosslessNumber, LosslessNumber };

/** Parses JSON keeping every number as written (LosslessNumber), so 64-bit integers survive. */
export function parseLossless(text: string): unknown {
  return parse(text);
}

export function stringifyLossless(value: unknown): string {
  return stringify(value) ?? 'null';
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !isLosslessNumber(value);
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * Reads a signed 64-bit integer given as a JSON number or a decimal string. Returns its canonical
 * decimal form, or undefined when the value is anything else (a fraction, an exponent, out of range).
 */
export function readInt64(value: unknown): string | undefined {
  let text: string;
  if (isLosslessNumber(value)) text = value.value;
  else if (typeof value === 'string') text = value;
  else return undefined;
  if (!/^-?\d{1,20}$/.test(text)) return undefined;
  const n = BigInt(text);
  return n >= INT64_MIN && n <= INT64_MAX ? n.toString() : undefined;
}

/** Deepest nesting of arrays and objects a request body may have; real bodies here need a handful. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests arrays or objects deeper than `max`, found by one pass over the text (brackets
 * inside strings do not count), before any parser recurses into it. Malformed text is left to the parser.
 */
export function jsonTooDeep(text: string | Buffer, max = MAX_JSON_DEPTH): boolean {
  const s = typeof text === 'string' ? text : text.toString('latin1');
  let depth = 0;
  let inString = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}
