import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** 18 random bytes: 144 bits, written as 24 base64url characters. */
const TOKEN_BYTES = 18;

/** How long an unlock holds at most (docs/LINKS.md). */
export const ACCESS_TTL_MS = 24 * 3600 * 1000;

/** What an access string is bound to: the link, and the generation of its password. */
export interface AccessSubject {
  linkId: string;
  passwordGen: number;
}

/**
 * Link tokens and the access strings a password unlock hands out. An access string is
 * `<expiry in epoch ms>.<HMAC-SHA256 of link id, password generation and expiry>` under a key derived
 * from the service's secret: any gateway checks it without shared state, it serves only the link it
 * was made for, and changing the password (a new generation) ends every string made before.
 */
export class LinkSecrets {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = createHmac('sha256', secret).update('filesync link access v1').digest();
  }

  newToken(): string {
    return randomBytes(TOKEN_BYTES).toString('base64url');
  }

  issue(subject: AccessSubject, now = Date.now()): { access: string; expiresAt: Date } {
    const expires = now + ACCESS_TTL_MS;
    return { access: `${expires}.${this.sign(subject, expires)}`, expiresAt: new Date(expires) };
  }

  /** True when `access` was issued for this link at its current password generation and has not expired. */
  verify(subject: AccessSubject, access: string, now = Date.now()): boolean {
    const match = /^(\d{13,15})\.([A-Za-z0-9_-]{43})$/.exec(access);
    if (!match) return false;
    const expires = Number(match[1]);
    if (!(expires > now) || expires > now + ACCESS_TTL_MS) return false;
    const expected = Buffer.from(this.sign(subject, expires));
    const given = Buffer.from(match[2]!);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  private sign(subject: AccessSubject, expires: number): string {
    return createHmac('sha256', this.key).update(`${subject.linkId}|${subject.passwordGen}|${expires}`).digest('base64url');
  }
}
