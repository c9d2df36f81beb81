import type { OwnerTransactions } from '../db/owner.transaction';
import { ReservationRepository } from '../db/reservation.repository';
import type { ContentStore, ResumableDataStore } from '../storage/content.store';
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
    const dropped = await this.owners.run(userId, async (trx) => {
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
    return this.owners.run(userId, (trx) => new ReservationRepository(trx).release(userId, uploadId));
  }

  /** Ends every reservation made before `cutoff` (uploads past their expiry, whatever is left of their bytes). */
  async expire(cutoff: Date, chunk = 500): Promise<number> {
    let released = 0;
    for (;;) {
      const due = await this.reservations.expired(cutoff, chunk);
      if (due.length === 0) return released;
      let progressed = false;
      for (const entry of due) {
        const done = await this.owners.run(entry.userId, (trx) => new ReservationRepository(trx).release(entry.userId, entry.uploadId));
        if (done > 0 || (await this.reservations.ownerOf(entry.uploadId)) === undefined) progressed = true;
        released++;
      }
      if (!progressed || due.length < chunk) return released;
    }
  }
}

/**
 * The resumable uploads' datastore, with every removal of an upload (completion, termination) also
 * ending its reservation. The tus library calls `remove` itself on termination, so this is where the
 * release cannot be forgotten; the expiry job releases by age (UploadReservations.expire).
 */
export function releasingOnRemove(store: ResumableDataStore, release: (uploadId: string) => Promise<unknown>): ResumableDataStore {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'remove') {
        return async (uploadId: string) => {
          await target.remove(uploadId);
          await release(uploadId);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
