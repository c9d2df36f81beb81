import { NO_DEVICE, type OwnerTransactions } from '../db/owner.transaction';
import { ReservationRepository } from './reservation.repository';
import type { ContentStore } from '../storage/content.store';
import { QuotaGuard, silentQuotaObserver, type QuotaObserver } from './quota.guard';

/**
 * The bytes of resumable uploads in the quota: a creation reserves its Upload-Length (refused with 507
 * when it does not fit, under the owner's lock, so parallel creations and uploads cannot overshoot
 * together), and the reservation ends when the upload finishes (inside the transaction that commits
 * the file: see `releaseWithin` callers), is terminated, fails, or expires.
 */
export class UploadReservations {
  constructor(
    private readonly owners: OwnerTransactions,
    private readonly reservations: ReservationRepository,
    private readonly store: ContentStore,
    private readonly observer: QuotaObserver = silentQuotaObserver,
  ) {}

  /** Reserves `bytes` for a new upload (507 when they do not fit); versions dropped to make room leave the store after. */
  async reserve(userId: string, uploadId: string, bytes: number): Promise<void> {
    const dropped = await this.owners.run({ userId, deviceId: NO_DEVICE }, async (trx) => {
      const quota = new QuotaGuard(trx, this.observer);
      await quota.admit(userId, { adds: bytes });
      await new ReservationRepository(trx).reserve(userId, uploadId, bytes, new Date());
      return quota.makeRoom(userId);
    });
    // Committed: what is left if a removal fails is content no row names, which fsck reports.
    for (const v of dropped) await this.store.remove(v.storageKey).catch(() => undefined);
  }

  /** Ends an upload's reservation, if it still has one (termination, a failed completion, expiry). */
  async release(uploadId: string): Promise<number> {
    const userId = await this.reservations.ownerOf(uploadId);
    if (!userId) return 0;
    return this.owners.run({ userId, deviceId: NO_DEVICE }, (trx) => new ReservationRepository(trx).release(userId, uploadId));
  }

  /** Ends every reservation made before `cutoff` (uploads past their expiry, whatever is left of their bytes). */
  async expire(cutoff: Date, chunk = 500): Promise<number> {
    let released = 0;
    for (;;) {
      const due = await this.reservations.expired(cutoff, chunk);
      if (due.length === 0) return released;
      let progressed = false;
      for (const entry of due) {
        const done = await this.owners.run({ userId: entry.userId, deviceId: NO_DEVICE }, (trx) => new ReservationRepository(trx).release(entry.userId, entry.uploadId));
        if (done > 0 || (await this.reservations.ownerOf(entry.uploadId)) === undefined) progressed = true;
        released++;
      }
      if (!progressed || due.length < chunk) return released;
    }
  }
}
