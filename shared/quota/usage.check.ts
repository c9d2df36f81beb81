import { NO_DEVICE, type OwnerTransactions } from '../db/owner.transaction';
import { UsageRepository, type UsageDifference } from './usage.repository';

const PAGE = 500;

/**
 * The byte counters of every user against the rows they derive from (usage.repository.ts). With
 * `repair`, a user whose counters drifted gets them recomputed in their owner transaction, so no
 * write of theirs runs between the comparison and the fix. Counters only: no content is touched.
 */
export async function checkUsage(
  usage: UsageRepository,
  owners: OwnerTransactions,
  repair: boolean,
): Promise<{ drift: UsageDifference[]; usersRepaired: number }> {
  const drift: UsageDifference[] = [];
  let usersRepaired = 0;
  let after = '';
  for (;;) {
    const ids = await usage.userIds(after, PAGE);
    if (ids.length === 0) break;
    for (const userId of ids) {
      const found = await usage.differences(userId);
      if (found.length === 0) continue;
      drift.push(...found);
      if (!repair) continue;
      await owners.run({ userId, deviceId: NO_DEVICE }, async (trx) => {
        const repo = new UsageRepository(trx);
        if ((await repo.differences(userId)).length > 0) {
          await repo.rebuild(userId);
          usersRepaired++;
        }
      });
    }
    after = ids[ids.length - 1]!;
  }
  return { drift, usersRepaired };
}
