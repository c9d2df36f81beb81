import { randomFillSync } from 'node:crypto';

const ID_PATTERN = /^[0-9a-f]{32}$/;

/** CSPRNG output drawn 256 ids at a time: one call to the generator costs more than the 16 bytes it gives. */
const entropy = Buffer.alloc(4096);
let drawn = entropy.length;

/** A new opaque id: 32 lowercase hex characters from the CSPRNG (not a UUID). */
export function newId(): string {
  if (drawn === entropy.length) {
    randomFillSync(entropy);
    drawn = 0;
  }
  drawn += 16;
  return entropy.toString('hex', drawn - 16, drawn);
}

export function isId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}
