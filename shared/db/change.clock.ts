/** Whose tree a transaction changes, and which device's request changes it (NO_DEVICE: none). */
export interface ChangeAuthor {
  userId: string;
  deviceId: string;
}

/** What every change of a resource records: its feed position and the device that made it. */
export interface ChangeStamp {
  seq: number;
  deviceId: string;
}

/**
 * Positions in one owner's change feed. They are handed out while the owner's row is locked, so the
 * transaction that takes position n commits before any transaction can take n + 1: a reader that has
 * seen n + 1 has necessarily been able to see n, whatever the clocks of the machines say. Each
 * position comes stamped with the device of the transaction, so no write path can record a change
 * without saying who made it.
 */
export class ChangeClock {
  private last: number;

  constructor(
    readonly userId: string,
    private readonly start: number,
    readonly deviceId: string,
  ) {
    this.last = start;
  }

  /** The next position; each change of the transaction (an op, an upload, a delete) takes one. */
  next(): ChangeStamp {
    return { seq: ++this.last, deviceId: this.deviceId };
  }

  get advanced(): boolean {
    return this.last !== this.start;
  }

  get position(): number {
    return this.last;
  }
}
