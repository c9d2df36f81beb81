import { AppError } from '../../../shared/errors';
import type { UserRepository } from '../../../shared/db/repositories/user.repository';
import { takeAttempts, type AttemptLimit } from './attempt.limit';
import type { PasswordHasher } from './password.hasher';

export interface ConfirmationLimits {
  /** Per client address, as the login's. */
  address: AttemptLimit;
  /** Per client address and username, as the login's. */
  account: AttemptLimit;
}

/**
 * Asks a signed-in user for the account password again before something that outlasts the token (a
 * new app password): a stolen token alone cannot mint a lasting credential. It is a sign-in in every
 * respect: counted against the login limits before Argon2 runs (given back when right) and verified
 * through the shared PasswordHasher and its concurrency limiter.
 */
export class PasswordConfirmation {
  constructor(
    private readonly users: Pick<UserRepository, 'findActiveById'>,
    private readonly hasher: PasswordHasher,
    private readonly limits: ConfirmationLimits,
  ) {}

  /** Resolves when `password` is the user's; FORBIDDEN when not, RATE_LIMITED over the limits. */
  async confirm(who: { userId: string; username: string }, address: string, password: string): Promise<void> {
    const attempt = await takeAttempts([
      [this.limits.address, address, 'too many sign-in attempts from this address, retry later'],
      [this.limits.account, `${address}|${who.username.slice(0, 256).toLowerCase()}`, 'too many sign-in attempts, retry later'],
    ]);
    let ok: boolean;
    try {
      const user = await this.users.findActiveById(who.userId);
      if (!user) throw new AppError('UNAUTHORIZED', 'missing or invalid token');
      ok = await this.hasher.verify(user.passwordHash, password);
    } catch (err) {
      await attempt.succeeded(); // nothing was checked
      throw err;
    }
    if (!ok) throw new AppError('FORBIDDEN', 'currentPassword is wrong');
    await attempt.succeeded();
  }
}
