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
