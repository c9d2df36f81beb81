import type { AppPasswordRecord, AppPasswordRepository } from '../../../shared/db/repositories/app-password.repository';
import type { Principal } from '../../../shared/db/repositories/user.repository';
import { notFound } from '../../../shared/errors';
import { isId, newId } from '../../../shared/ids';
import type { Logger } from '../../../shared/logger';
import type { PasswordConfirmation } from '../auth/password.confirmation';
import type { PrincipalCache } from '../auth/principal.cache';
import type { AppPasswordSecrets } from './app-password.secret';

export type { AppPasswordRecord };

/** The platform recorded on the device of an app password. */
export const APP_PASSWORD_PLATFORM = 'webdav';

export interface CreatedAppPassword extends AppPasswordRecord {
  /** Shown once, in the creation's answer; only its hash is stored. */
  password: string;
}

/**
 * App passwords: created with a device of their own, listed, revoked, and checked for WebDAV's Basic
 * authentication. A checked credential is remembered in the principal cache (under its hash, never the
 * password) for AUTH_CACHE_MS; a revocation makes every gateway forget the user's entries at once.
 */
export class AppPasswordsService {
  constructor(
    private readonly repo: AppPasswordRepository,
    private readonly secrets: AppPasswordSecrets,
    private readonly cache: PrincipalCache,
    private readonly logger: Logger,
    private readonly confirmation: PasswordConfirmation,
  ) {}

  /** Only with the account password (`currentPassword`), checked as a sign-in from `address`. */
  async create(who: { userId: string; username: string }, name: string, currentPassword: string, address: string): Promise<CreatedAppPassword> {
    await this.confirmation.confirm(who, address, currentPassword);
    const userId = who.userId;
    const password = this.secrets.generate();
    const record: AppPasswordRecord = { id: newId(), userId, deviceId: newId(), name, createdAt: new Date(), lastUsedAt: null };
    await this.repo.insert(record, this.secrets.hash(password), APP_PASSWORD_PLATFORM);
    return { ...record, password };
  }

  list(userId: string): Promise<AppPasswordRecord[]> {
    return this.repo.list(userId);
  }

  async revoke(userId: string, id: string): Promise<void> {
    if (!isId(id) || !(await this.repo.delete(userId, id, new Date()))) throw notFound('no such app password');
    await this.cache.revoked(userId);
  }

  /** The principal of a credential this gateway verified within AUTH_CACHE_MS; no lookup, nothing counted. */
  remembered(username: string, password: string): Principal | undefined {
    const cached = this.cache.getByKey(`app-password:${this.secrets.hash(password)}`);
    return cached && cached.username.toLowerCase() === username.toLowerCase() ? cached : undefined;
  }

  /** The principal of a username and app password, or undefined when they do not name an active one. */
  async authenticate(username: string, password: string): Promise<Principal | undefined> {
    const hash = this.secrets.hash(password);
    const key = `app-password:${hash}`;
    const cached = this.cache.getByKey(key);
    if (cached) return cached.username.toLowerCase() === username.toLowerCase() ? cached : undefined;
    const generation = this.cache.generation;
    const found = await this.repo.findPrincipal(username, hash);
    if (!found) return undefined;
    const { appPasswordId, ...principal } = found;
    this.cache.remember(principal, generation, key);
    // Recorded on a cache miss only, so at most once per AUTH_CACHE_MS per gateway: "last used" is that precise.
    this.repo.touch(appPasswordId, new Date()).catch((err: Error) => this.logger.warn({ err: err.message }, 'app password: could not record its use'));
    return principal;
  }
}
