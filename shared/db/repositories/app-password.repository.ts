import type { Knex } from 'knex';
import { DeviceRepository } from './device.repository';
import type { Principal } from './user.repository';

export interface AppPasswordRecord {
  id: string;
  userId: string;
  deviceId: string;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

interface AppPasswordRow {
  id: string;
  user_id: string;
  device_id: string;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
}

const toRecord = (row: AppPasswordRow): AppPasswordRecord => ({
  id: row.id,
  userId: row.user_id,
  deviceId: row.device_id,
  name: row.name,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
});

/** The only SQL about app passwords; every read and write is scoped to the owner, except the credential check. */
export class AppPasswordRepository {
  constructor(private readonly db: Knex) {}

  /** Creates the password's own device and the password in one transaction. */
  async insert(record: AppPasswordRecord, passwordHash: string, platform: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      const device = { id: record.deviceId, name: record.name, platform, userId: record.userId, kind: 'app_password' as const, createdAt: record.createdAt };
      await new DeviceRepository(this.db).insert(device, trx);
      await trx('app_passwords').insert({
        id: record.id,
        user_id: record.userId,
        device_id: record.deviceId,
        name: record.name,
        password_hash: passwordHash,
        created_at: record.createdAt,
      });
    });
  }

  async list(userId: string): Promise<AppPasswordRecord[]> {
    const rows = await this.db<AppPasswordRow>('app_passwords').where({ user_id: userId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
    return rows.map(toRecord);
  }

  /** Removes the password and retires its device; false when it is not the owner's. */
  async delete(userId: string, id: string, now: Date): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      const row = await trx<AppPasswordRow>('app_passwords').where({ id, user_id: userId }).forUpdate().first();
      if (!row) return false;
      await trx('app_passwords').where({ id }).del();
      await trx('devices').where({ id: row.device_id }).whereNull('deleted_at').update({ deleted_at: now });
      return true;
    });
  }

  /**
   * The principal of a Basic credential: the password's hash names one row, whose user must be the
   * one named (case-insensitively, as at login) and still active, as must its device. One statement
   * on the unique hash key.
   */
  async findPrincipal(username: string, passwordHash: string): Promise<(Principal & { appPasswordId: string }) | undefined> {
    const [rows] = (await this.db.raw(
      `SELECT u.id, u.username, u.is_admin, d.id AS device_id, a.id AS app_password_id
         FROM app_passwords a JOIN users u ON u.id = a.user_id JOIN devices d ON d.id = a.device_id
        WHERE a.password_hash = ? AND u.username_normalized = ? AND u.deleted_at IS NULL AND d.deleted_at IS NULL LIMIT 1`,
      [passwordHash, username.toLowerCase()],
    )) as [Array<{ id: string; username: string; is_admin: number; device_id: string; app_password_id: string }>];
    const row = rows[0];
    if (!row) return undefined;
    return { userId: row.id, username: row.username, isAdmin: Boolean(row.is_admin), deviceId: row.device_id, appPasswordId: row.app_password_id };
  }

  async touch(id: string, now: Date): Promise<void> {
    await this.db('app_passwords').where({ id }).update({ last_used_at: now });
  }
}
