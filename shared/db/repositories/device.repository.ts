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

  /** Records the informative owner of a device at login. */
  async recordLogin(id: string, userId: string, now: Date): Promise<void> {
    await this.db('devices').where({ id }).update({ user_id: userId, last_login_at: now });
  }
}
