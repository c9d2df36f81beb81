import type { Knex } from 'knex';

export interface DeviceRecord {
  id: string;
  name: string;
  platform: string | null;
  userId: string | null;
  createdAt: Date;
}

interface DeviceRow {
  id: string;
  name: string;
  platform: string | null;
  user_id: string | null;
  created_at: Date;
}

export class DeviceRepository {
  constructor(private readonly db: Knex) {}

  async insert(device: DeviceRecord): Promise<void> {
    await this.db('devices').insert({
      id: device.id,
      name: device.name,
      platform: device.platform,
      user_id: device.userId,
      created_at: device.createdAt,
    });
  }

  async findActive(id: string): Promise<DeviceRecord | undefined> {
    const row = await this.db<DeviceRow>('devices').where({ id }).whereNull('deleted_at').first();
    return row ? { id: row.id, name: row.name, platform: row.platform, userId: row.user_id, createdAt: row.created_at } : undefined;
  }

  /** Records the informative owner of a device at login. */
  async recordLogin(id: string, userId: string, now: Date): Promise<void> {
    await this.db('devices').where({ id }).update({ user_id: userId, last_login_at: now });
  }
}
