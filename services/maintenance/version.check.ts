import type { ContentHolder, ContentRepository } from '../../shared/db/repositories/content.repository';
import { NO_DEVICE, type OwnerTransactions } from '../../shared/db/owner.transaction';
import { VersionRepository } from '../../shared/db/repositories/version.repository';
import type { ContentStore } from '../../shared/storage/content.store';

const PAGE = 1000;

/** Kept versions whose content the store says does not exist (checked twice, as for resources). */
export async function findMissingVersions(store: ContentStore, content: ContentRepository): Promise<ContentHolder[]> {
  const missing: ContentHolder[] = [];
  let after = '';
  for (;;) {
    const holders = await content.versionHolders(after, PAGE);
    if (holders.length === 0) return missing;
    for (const holder of holders) {
      if (await store.stat(holder.storageKey)) continue;
      if (await content.versionHolds(holder.id, holder.storageKey)) missing.push(holder);
    }
    after = holders[holders.length - 1]!.id;
  }
}

/**
 * Drops versions whose content is gone, each in its owner's transaction (their bytes leave the
 * counters with the rows): a version that cannot be read or restored is no version. Returns how many.
 */
export async function dropMissingVersions(store: ContentStore, owners: OwnerTransactions, missing: ContentHolder[]): Promise<number> {
  let dropped = 0;
  for (const holder of missing) {
    const done = await owners.run({ userId: holder.userId, deviceId: NO_DEVICE }, async (trx) => {
      if (await store.stat(holder.storageKey)) return 0;
      return (await new VersionRepository(trx).remove(holder.userId, [holder.id])).length;
    });
    dropped += done;
  }
  return dropped;
}
