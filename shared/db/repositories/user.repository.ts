import type { Knex } from 'knex';
import { STATEMENTS, statementTag } from '../statement.tags';
import { nameConflict } from '../../errors';
import { duplicateKey } from '../errors';

export interface UserRecord {
  id: string;
  username: string;
  email: string | null;
  passwordHash: string;
  isAdmin: boolean;
  createdAt: Date;
  deletedAt: Date | null;
  /** Null: no quota. */
  quotaBytes: number | null;
}

/** An active user as administrators list them, with the bytes they hold. */
export type ListedUser = Omit<UserRecord, 'passwordHash' | 'deletedAt'> & { usedBytes: number };

export type NewUser = Omit<UserRecord, 'deletedAt' | 'quotaBytes'> & { quotaBytes?: number | null };

/** The caller behind a token: an active user on an active device. */
export interface Principal {
  userId: string;
  username: string;
  isAdmin: boolean;
  deviceId: string;
}

interface UserRow {
  id: string;
  username: string;
  email: string | null;
  password_hash: string;
  is_admin: number;
  created_at: Date;
  deleted_at: Date | null;
  quota_bytes: string | number | null;
}

const toUser = (row: UserRow): UserRecord => ({
  id: row.id,
  username: row.username,
  email: row.email,
  passwordHash: row.password_hash,
  isAdmin: Boolean(row.is_admin),
  createdAt: row.created_at,
  deletedAt: row.deleted_at,
  quotaBytes: row.quota_bytes === null || row.quota_bytes === undefined ? null : Number(row.quota_bytes),
});

export class UserRepository {
  constructor(private readonly db: Knex) {}

  async count(): Promise<number> {
    const row = await this.db('users').count<{ n: number | string }[]>({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  /** Looks a user up by the lowercase form of the username, deleted ones included. */
  async findByUsername(username: string): Promise<UserRecord | undefined> {
    const row = await this.db<UserRow>('users').where('username_normalized', username.toLowerCase()).first();
    return row ? toUser(row) : undefined;
  }

  /** The username of the longest-standing active administrator; undefined when there is none. */
  async firstAdminUsername(): Promise<string | undefined> {
    const row = await this.db<UserRow>('users').where({ is_admin: 1 }).whereNull('deleted_at').orderBy([{ column: 'created_at' }, { column: 'id' }]).first('username');
    return row?.username;
  }

  /** One page of the active users by username (code point order), id as tie-breaker, and their number. */
  async listActive(limit: number, offset: number): Promise<{ items: ListedUser[]; total: number }> {
    const [rows, count] = await Promise.all([
      this.db('users')
        .whereNull('deleted_at')
        .orderBy([{ column: 'username' }, { column: 'id' }])
        .limit(limit)
        .offset(offset)
        .select<Array<UserRow & { used_bytes: string | number }>>(
          'id', 'username', 'email', 'is_admin', 'created_at', 'quota_bytes',
          this.db.raw('files_bytes + trash_bytes + versions_bytes + uploads_bytes AS used_bytes'),
        ),
      this.db('users').whereNull('deleted_at').count<{ n: number | string }[]>({ n: '*' }).first(),
    ]);
    const items = rows.map((row) => {
      const { passwordHash: _hash, deletedAt: _deleted, ...user } = toUser(row);
      return { ...user, usedBytes: Number(row.used_bytes) };
    });
    return { items, total: Number(count?.n ?? 0) };
  }

  async findActiveById(id: string): Promise<UserRecord | undefined> {
    const row = await this.db<UserRow>('users').where({ id }).whereNull('deleted_at').first();
    return row ? toUser(row) : undefined;
  }

  async insert(user: NewUser): Promise<void> {
    try {
      await this.db('users').insert({
        id: user.id,
        username: user.username,
        username_normalized: user.username.toLowerCase(),
        email: user.email,
        password_hash: user.passwordHash,
        is_admin: user.isAdmin,
        created_at: user.createdAt,
        updated_at: user.createdAt,
        quota_bytes: user.quotaBytes ?? null,
      });
    } catch (err) {
      if (duplicateKey(err) === 'uq_users_username_normalized') throw nameConflict('a user with that username already exists');
      throw err;
    }
  }

  async updatePasswordHash(id: string, passwordHash: string, now: Date): Promise<boolean> {
    const n = await this.db('users').where({ id }).whereNull('deleted_at').update({ password_hash: passwordHash, updated_at: now });
    return n > 0;
  }

  async softDelete(id: string, now: Date): Promise<boolean> {
    const n = await this.db('users').where({ id }).whereNull('deleted_at').update({ deleted_at: now, updated_at: now });
    return n > 0;
  }

  /** One indexed query per authenticated request: both the user and the device must still be active. */
  /** Runs on every authenticated request: one fixed statement, no query builder. */
  async findPrincipal(userId: string, deviceId: string): Promise<Principal | undefined> {
    const [rows] = (await this.db.raw(
      `${statementTag(STATEMENTS.findPrincipal)} SELECT u.id, u.username, u.is_admin, d.id AS device_id FROM users u JOIN devices d ON d.id = ?
       WHERE u.id = ? AND u.deleted_at IS NULL AND d.deleted_at IS NULL LIMIT 1`,
      [deviceId, userId],
    )) as [Array<{ id: string; username: string; is_admin: number; device_id: string }>];
    const row = rows[0];
    return row ? { userId: row.id, username: row.username, isAdmin: Boolean(row.is_admin), deviceId: row.device_id } : undefined;
  }

}
