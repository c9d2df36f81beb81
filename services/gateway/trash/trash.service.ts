import type { ChangeAuthor, OwnerTransactions } from '../../../shared/db/owner.transaction';
import type { PageResult, ResourceRecord } from '../../../shared/db/repositories/resource.record';
import type { TrashRepository } from '../../../shared/db/repositories/trash.repository';
import { notFound } from '../../../shared/errors';
import { isId } from '../../../shared/ids';
import type { TrashPurger } from '../../../shared/lifecycle/trash.purger';

export type { ResourceRecord };

const notInTrash = () => notFound('no such resource in the trash');

/**
 * The trash use cases. What is in it: every deleted resource not yet purged, a folder's contents
 * included, since each of them can be restored on its own (into its old folder when that is active,
 * else at the root). Restoring or purging a folder takes along what was deleted with it.
 */
export class TrashService {
  constructor(
    private readonly owners: OwnerTransactions,
    private readonly trash: TrashRepository,
    private readonly purger: TrashPurger,
  ) {}

  list(userId: string, limit: number, offset: number): Promise<PageResult<ResourceRecord>> {
    return this.trash.list(userId, limit, offset);
  }

  /**
   * Restores a resource and everything deleted with it, all or nothing, in one owner transaction: a
   * name clash anywhere (NAME_CONFLICT from the sibling-name key) rolls the whole restore back.
   */
  async restore(author: ChangeAuthor, id: string): Promise<ResourceRecord> {
    const { userId } = author;
    await this.requireInTrash(userId, id);
    return this.owners.run(author, async (trx, clock) => {
      const repo = this.trash.withTransaction(trx);
      const root = await repo.findForUpdate(userId, id);
      if (!root) throw notInTrash();
      const others = await repo.deletedWith(root);
      const parentId = root.parentId !== null && (await repo.isActiveFolder(userId, root.parentId)) ? root.parentId : null;
      const now = new Date();
      const stamp = clock.next();
      await repo.restore(userId, root.id, parentId, others, now, stamp);
      return { ...root, parentId, deletedAt: null, updatedAt: now, rev: root.rev + 1, changeSeq: stamp.seq, changeDeviceId: stamp.deviceId };
    });
  }

  async purge(author: ChangeAuthor, id: string): Promise<void> {
    await this.requireInTrash(author.userId, id);
    if (!(await this.purger.purgeTree(author, id))) throw notInTrash();
  }

  /**
   * A plain read before the owner's lock: an id that is not in the caller's trash changes nothing, so
   * it is answered without waiting for the lock. Under the lock the resource is read again.
   */
  private async requireInTrash(userId: string, id: string): Promise<void> {
    if (!isId(id) || !(await this.trash.isInTrash(userId, id))) throw notInTrash();
  }
}
