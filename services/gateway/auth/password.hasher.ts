import argon2 from 'argon2';
import { ConcurrencyLimiter } from './limiter';

/** Argon2id, time cost 1, memory 64 MiB, parallelism 4, 32-byte hash: every stored password, and share-link passwords. */
export const ARGON2_OPTIONS = {
  type: argon2.argon2id,
  timeCost: 1,
  memoryCost: 65536,
  parallelism: 4,
  hashLength: 32,
} as const;

/**
 * Hashing and verification behind one concurrency limiter. `verify` with no stored hash checks the
 * password against a dummy hash, so an unknown user costs the same time as a wrong password.
 */
export class PasswordHasher {
  private dummyHash: Promise<string> | undefined;

  constructor(private readonly limiter: ConcurrencyLimiter) {}

  hash(password: string): Promise<string> {
    return this.limiter.run(() => argon2.hash(password, ARGON2_OPTIONS));
  }

  async verify(storedHash: string | undefined, password: string): Promise<boolean> {
    const hash = storedHash ?? (await this.dummy());
    // argon2.verify compares in constant time; it also throws on a malformed stored hash.
    const ok = await this.limiter.run(() => argon2.verify(hash, password).catch(() => false));
    return ok && storedHash !== undefined;
  }

  private dummy(): Promise<string> {
    this.dummyHash ??= argon2.hash('filesync-dummy-password', ARGON2_OPTIONS);
    return this.dummyHash;
  }

  /** Computes the dummy hash ahead of the first login, so that login is not slower than the rest. */
  async warmUp(): Promise<void> {
    await this.dummy();
  }
}
