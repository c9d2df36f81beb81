import { promises as fs } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Config } from '../../shared/config';
import { isAppError } from '../../shared/errors';
import { UserRepository } from '../../shared/db/repositories/user.repository';
import type { Db } from '../../shared/db/knex';
import type { PasswordHasher } from './auth/password.hasher';
import { NO_REVOCATIONS, UsersService } from './users/users.service';

export class StartupError extends Error {}

/**
 * The signing secret: JWT_SECRET when set, otherwise one generated once and kept under the data
 * directory (created exclusively, so gateways starting together agree on it).
 */
export async function resolveJwtSecret(config: Config): Promise<string> {
  if (config.jwtSecret) return config.jwtSecret;
  const file = path.join(config.dataDir, 'jwt-secret');
  await fs.mkdir(config.dataDir, { recursive: true });
  try {
    await fs.writeFile(file, randomBytes(48).toString('base64url'), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const secret = (await fs.readFile(file, 'utf8')).trim();
  if (secret.length < 32) throw new StartupError(`${file} holds a secret shorter than 32 bytes; remove it or set JWT_SECRET`);
  return secret;
}

/**
 * The administrator the start-up line names: ADMIN_USERNAME when that account is an active
 * administrator, otherwise the longest-standing one.
 */
export async function administratorName(config: Config, db: Db): Promise<string | undefined> {
  const users = new UserRepository(db);
  if (config.admin) {
    const named = await users.findByUsername(config.admin.username);
    if (named?.isAdmin && !named.deletedAt) return named.username;
  }
  return users.firstAdminUsername();
}

/** With no user at all, the initial administrator comes from ADMIN_* (README, "Run it"), or the service refuses to start. */
export async function ensureInitialAdmin(config: Config, db: Db, hasher: PasswordHasher): Promise<'created' | 'exists'> {
  const users = new UsersService(new UserRepository(db), hasher, config.defaultQuotaBytes, NO_REVOCATIONS);
  if (await users.any()) return 'exists';
  if (!config.admin) {
    throw new StartupError('no user exists: set ADMIN_USERNAME and ADMIN_PASSWORD to create the initial administrator');
  }
  try {
    await users.create({ username: config.admin.username, password: config.admin.password, email: config.admin.email, isAdmin: true });
  } catch (err) {
    // Another gateway starting at the same time created it first.
    if (isAppError(err) && err.code === 'NAME_CONFLICT') return 'exists';
    throw err;
  }
  return 'created';
}
