import type { Knex } from 'knex';
import { AppError } from '../errors';
import { UsageLedger } from './usage.ledger';
import { usedBytes, type Usage } from './usage.repository';
import { VersionRepository, type DroppedVersion } from '../db/repositories/version.repository';

/** Why a write was refused for the quota, as the refusals metric names it. */
export type QuotaRefusal = 'declared_size' | 'stored_bytes';

/** Told of every refusal (the metrics); no user in it, so the label set stays small. */
export interface QuotaObserver {
  refused(reason: QuotaRefusal): void;
}

export const silentQuotaObserver: QuotaObserver = { refused: () => undefined };

/** What a write does to the bytes that count against the quota (all but versions). */
export interface QuotaWrite {
  /** Bytes of the new content (or reservation): `neededBytes` when it is refused. */
  adds: number;
  /** Bytes the write takes off those counters: the content it replaces, which becomes a version. */
  frees?: number;
}

/** How many versions are read per round when room is made. */
const ROOM_ROUND = 100;

/**
 * The API's 507: `usedBytes` before the write, `neededBytes` what it adds.
 */
export function quotaExceeded(usage: Usage, neededBytes: number): AppError {
  return new AppError('QUOTA_EXCEEDED', 'this write does not fit in the quota', {
    details: { quotaBytes: usage.quotaBytes, usedBytes: usedBytes(usage), neededBytes },
  });
}

/**
 * Whether a write fits, on counters read without a lock: the early refusal of a request whose
 * declared size already cannot fit (before its body is read). The decision that counts is `admit`'s.
 */
export function cannotFit(usage: Usage, write: QuotaWrite): boolean {
  // A write that adds nothing (a reserved upload completing, an empty file) always fits.
  if (usage.quotaBytes === null || write.adds <= 0) return false;
  return usage.files + usage.trash + usage.uploads - (write.frees ?? 0) + write.adds > usage.quotaBytes;
}

/**
 * Which of the versions given, least recently replaced first, go to bring `excess` bytes over the quota
 * down to none: each in turn until the excess is gone. Returns their ids and the excess left (above
 * zero when even all of them are not enough).
 */
export function oldestToDrop(excess: number, oldest: readonly { id: string; sizeBytes: number }[]): { ids: string[]; excess: number } {
  const ids: string[] = [];
  for (const v of oldest) {
    if (excess <= 0) break;
    ids.push(v.id);
    excess -= v.sizeBytes;
  }
  return { ids, excess };
}

/**
 * The quota rule (docs/ARCHITECTURE.md, "Quotas and usage"), applied inside the owner's transaction, whose lock on the owner's
 * row is what makes parallel writes unable to overshoot together: each one sees the bytes the
 * previous ones committed. A write fits when the bytes other than versions, after it, are within the
 * quota; versions then live in the room left, the least recently replaced dropped first.
 */
export class QuotaGuard {
  private readonly ledger: UsageLedger;
  private readonly versions: VersionRepository;

  constructor(
    trx: Knex.Transaction,
    private readonly observer: QuotaObserver = silentQuotaObserver,
  ) {
    this.ledger = UsageLedger.of(trx);
    this.versions = new VersionRepository(trx);
  }

  /** Refuses (507) a write that does not fit even with no version left. Call before the write's changes. */
  async admit(userId: string, write: QuotaWrite): Promise<void> {
    const usage = await this.ledger.usage(userId);
    if (cannotFit(usage, write)) {
      this.observer.refused('stored_bytes');
      throw quotaExceeded(usage, write.adds);
    }
  }

  /**
   * After the write's changes: drops the owner's least recently replaced versions until every byte
   * fits in the quota. Returns what it dropped, whose content the caller removes after the commit.
   */
  async makeRoom(userId: string): Promise<DroppedVersion[]> {
    const usage = await this.ledger.usage(userId);
    if (usage.quotaBytes === null) return [];
    let excess = usedBytes(usage) - usage.quotaBytes;
    const dropped: DroppedVersion[] = [];
    while (excess > 0 && usage.versions > 0) {
      const oldest = await this.versions.oldest(userId, ROOM_ROUND);
      if (oldest.length === 0) break;
      const round = oldestToDrop(excess, oldest);
      excess = round.excess;
      dropped.push(...(await this.versions.remove(userId, round.ids)));
    }
    return dropped;
  }
}
