import { AppError, notFound } from '../../../shared/errors';
import { isId, newId } from '../../../shared/ids';
import type { UserRecord, UserRepository } from '../../../shared/db/repositories/user.repository';
import type { PasswordHasher } from '../auth/password.hasher';

export type { UserRecord };

/** What creating a user needs; the password is hashed here, never stored. */
export interface NewAccount {
  username: string;
  password: string;
  email: string | null;
  isAdmin: boolean;
}

/** Told when a user's account is deleted, so cached sign-ins of that user end (PrincipalCache). */
export interface Revocations {
  revoked(userId: string): Promise<void>;
}

/** For a caller that deletes no user: the startup bootstrap, which only creates the first one. */
export const NO_REVOCATIONS: Revocations = { revoked: async () => undefined };

/**
 * Users: created with the configured default quota (by an administrator, or as the initial
 * administrator at startup), looked up by name, deleted. Deleting marks the row and revokes the
 * user's cached sign-ins; a user's quota and usage are UsageService's.
 */
export class UsersService {
  constructor(
    private readonly users: UserRepository,
    private readonly hasher: PasswordHasher,
    private readonly defaultQuotaBytes: number | null,
    private readonly revocations: Revocations,
  ) {}

  /** The caller's own account; 401 when it is gone. */
  async me(userId: string): Promise<UserRecord> {
    const user = await this.users.findActiveById(userId);
    if (!user) throw new AppError('UNAUTHORIZED', 'missing or invalid token');
    return user;
  }

  /** A page of the active users, for administrators. */
  list(limit: number, offset: number) {
    return this.users.listActive(limit, offset);
  }

  /** Whether any user exists, deleted ones included. */
  async any(): Promise<boolean> {
    return (await this.users.count()) > 0;
  }

  /** Creates a user; NAME_CONFLICT when the username (in any case) is taken. */
  async create(account: NewAccount): Promise<UserRecord> {
    const user = {
      id: newId(),
      username: account.username,
      email: account.email,
      passwordHash: await this.hasher.hash(account.password),
      isAdmin: account.isAdmin,
      createdAt: new Date(),
      quotaBytes: this.defaultQuotaBytes,
    };
    await this.users.insert(user);
    return { ...user, deletedAt: null };
  }

  /** An active user's id and name, by username in any case. */
  async resolve(username: string): Promise<{ id: string; username: string }> {
    const user = await this.users.findByUsername(username);
    if (!user || user.deletedAt !== null) throw notFound('no such user');
    return { id: user.id, username: user.username };
  }

  /** Deletes user `id` on behalf of administrator `actorId`, who cannot delete their own account. */
  async delete(actorId: string, id: string): Promise<void> {
    if (!isId(id)) throw notFound('no such user');
    if (id === actorId) throw new AppError('INVALID_REQUEST', 'administrators cannot delete their own account');
    if (!(await this.users.softDelete(id, new Date()))) throw notFound('no such user');
    await this.revocations.revoked(id);
  }
}
