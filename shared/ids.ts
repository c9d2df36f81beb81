import { randomBytes } from 'node:crypto';

const ID_PATTERN = /^[0-9a-f]{32}$/;

/** A new opaque id: 32 lowercase hex characters from the CSPRNG (not a UUID). */
export function newId(): string {
  return randomBytes(16).toString('hex');
}

export function isId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}
