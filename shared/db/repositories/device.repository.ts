import type { Knex } from 'knex';

/**
 * What a device stands for: `client` (registered with POST /v1/devices, signed in on), or the device
 * of one credential: `app_password`, `link`. Changes made through a credential carry its device.
 */
export type DeviceKind = 'client' | 'app_password' | 'link';

export interface DeviceRecord {
  id: string;
  name: string;
  platform: string | null;
  userId: string | null;
  kind: DeviceKind;
  createdAt: Date;
}

interface DeviceRow {
  id: string;
  name: string;
  platform: string | null;
  user_id: string | null;
  kind: DeviceKind;
  created_at: Date;
}

const toRecord = (row: DeviceRow): DeviceRecord => ({
  id: row.id,
  name: row.name,
  platform: row.platform,
  userId: row.user_id,
  kind: row.kind,
  createdAt: row.created_at,
});

/** A client device as its user lists it. */
export interface ListedDevice {
  id: string;
  name: string;
  platform: string | null;
  createdAt: Date;
  /** The last sign-in on it (login); null before the first. */
  lastUsedAt: Date | null;
}

export class DeviceRepository {
  constructor(private readonly db: Knex) {}

  /** `trx`: the transaction that also creates the credential a non-client device belongs to. */
  async insert(device: DeviceRecord, trx: Knex = this.db): Promise<void> {
    await trx('devices').insert({
      id: device.id,
      name: device.name,
      platform: device.platform,
      user_id: device.userId,
      kind: device.kind,
      created_at: device.createdAt,
    });
  }

  async findActive(id: string): Promise<DeviceRecord | undefined> {
    const row = await this.db<DeviceRow>('devices').where({ id }).whereNull('deleted_at').first();
    return row ? toRecord(row) : undefined;
  }

  /** The user's active client devices (not those of app passwords or links), oldest first. */
  async listClients(userId: string): Promise<ListedDevice[]> {
    const rows = await this.db('devices')
      .where({ user_id: userId, kind: 'client' })
      .whereNull('deleted_at')
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .select<Array<{ id: string; name: string; platform: string | null; created_at: Date; last_login_at: Date | null }>>('id', 'name', 'platform', 'created_at', 'last_login_at');
    return rows.map((r) => ({ id: r.id, name: r.name, platform: r.platform, createdAt: r.created_at, lastUsedAt: r.last_login_at }));
  }

  /**
   * Retires one of the user's active devices, of any kind; an app password bound to it goes with it,
   * in the same transaction. False when it is not an active device of that user.
   */
  async retire(userId: string, id: string, now: Date): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      const retired = await trx('devices').where({ id, user_id: userId }).whereNull('deleted_at').update({ deleted_at: now });
      if (retired === 0) return false;
      await trx('app_passwords').where({ device_id: id, user_id: userId }).del();
      return true;
    });
  }

  /** Records the informative owner of a device at login. */
  async recordLogin(id: string, userId: string, now: Date): Promise<void> {
    await this.db('devices').where({ id }).update({ user_id: userId, last_login_at: now });
  }
}
