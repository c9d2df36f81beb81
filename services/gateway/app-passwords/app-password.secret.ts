import { createHmac, randomBytes } from 'node:crypto';

/** 24 random bytes: 192 bits, written as 32 base64url characters. */
const SECRET_BYTES = 24;

/**
 * App passwords are secrets the service draws itself, 192 random bits each. Against a secret that
 * cannot be guessed a slow hash buys nothing (Argon2 protects the low-entropy passwords people pick),
 * while every WebDAV request authenticates: Argon2's 64 MiB and tens of milliseconds per request would
 * be the whole cost of a PROPFIND. So the stored form is HMAC-SHA256 under a key derived from the
 * service's JWT secret: one indexed lookup checks a credential, a leaked table alone cannot even be
 * tested offline, and rotating JWT_SECRET signs out app passwords along with every token.
 */
export class AppPasswordSecrets {
  private readonly key: Buffer;

  constructor(jwtSecret: string) {
    this.key = createHmac('sha256', jwtSecret).update('filesync app passwords v1').digest();
  }

  generate(): string {
    return randomBytes(SECRET_BYTES).toString('base64url');
  }

  /** The stored form of a password (64 lowercase hex characters). */
  hash(password: string): string {
    return createHmac('sha256', this.key).update(password, 'utf8').digest('hex');
  }
}
