import type { Principal, UserRecord, UserRepository } from '../../../shared/db/repositories/user.repository';
import type { PrincipalCache } from './principal.cache';

export type { Principal };

/**
 * Who a request is, for the code that authenticates it (the `/v1` middleware, WebDAV, the dashboard
 * gate): that a verified token's user and device still exist, and an account by username for a
 * password check. Nothing else; the use cases of accounts are in auth.service.ts and users.service.ts.
 */
export class PrincipalService {
  constructor(
    private readonly users: UserRepository,
    private readonly cache: PrincipalCache,
  ) {}

  /**
   * The principal of that user and device: from the cache within AUTH_CACHE_MS of the last read
   * (a deleted account leaves it at once), else from MySQL, then remembered. Undefined when the
   * user or the device is gone.
   */
  async current(userId: string, deviceId: string): Promise<Principal | undefined> {
    const cached = this.cache.get(userId, deviceId);
    if (cached) return cached;
    const generation = this.cache.generation;
    const principal = await this.users.findPrincipal(userId, deviceId);
    if (principal) this.cache.remember(principal, generation);
    return principal;
  }

  /** The principal of that user and device read from MySQL, whatever the cache holds. */
  lookup(userId: string, deviceId: string): Promise<Principal | undefined> {
    return this.users.findPrincipal(userId, deviceId);
  }

  /** The account of that username, a deleted one included (the caller refuses it after the password check). */
  account(username: string): Promise<UserRecord | undefined> {
    return this.users.findByUsername(username);
  }
}
