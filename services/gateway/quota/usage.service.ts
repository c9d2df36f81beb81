import type { ByteCounts, UsageRepository } from '../../../shared/quota/usage.repository';
import { usedBytes } from '../../../shared/quota/usage.repository';
import type { UserRecord, UserRepository } from '../../../shared/db/repositories/user.repository';
import { notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import type { Usage } from '../../../shared/protocol';

/**
 * A user's quota and stored bytes. The counters are kept by the writes themselves (usage.ledger.ts),
 * so a usage read is one primary-key read of the user's row, whatever they store.
 */
export class UsageService {
  constructor(
    private readonly usage: UsageRepository,
    private readonly users: UserRepository,
  ) {}

  /** GET /users/me/usage and /users/:id/usage. */
  async of(userId: string): Promise<Usage> {
    const u = isId(userId) ? await this.usage.read(userId) : undefined;
    if (!u) throw notFound('no such user');
    return {
      quotaBytes: u.quotaBytes,
      usedBytes: usedBytes(u),
      filesBytes: u.files,
      trashBytes: u.trash,
      versionsBytes: u.versions,
      uploadsBytes: u.uploads,
    };
  }

  /** Bytes stored by all users together, per kind (the storage metrics). */
  totals(): Promise<ByteCounts> {
    return this.usage.totals();
  }

  /**
   * Sets a user's quota. A quota below what the user stores deletes nothing: it only refuses the
   * writes that add bytes from then on.
   */
  async setQuota(userId: string, quotaBytes: number | null): Promise<UserRecord> {
    if (!isId(userId)) throw notFound('no such user');
    await this.usage.setQuota(userId, quotaBytes);
    const user = await this.users.findActiveById(userId);
    if (!user) throw notFound('no such user');
    return user;
  }
}
