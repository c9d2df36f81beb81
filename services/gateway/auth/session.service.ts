import { AppError } from '../../../shared/errors';
import type { DeviceRepository } from '../../../shared/db/repositories/device.repository';
import type { UserRepository } from '../../../shared/db/repositories/user.repository';
import type { DevicesService } from '../devices/devices.service';
import type { PasswordHasher } from './password.hasher';
import type { TokenService } from './token.service';

export interface SessionView {
  user: { id: string; username: string; isAdmin: boolean };
  deviceId: string;
  expiresAt: string;
}

export interface SignedIn extends SessionView {
  /** Goes into the HttpOnly cookie only, never into a response body. */
  token: string;
}

/** Retires a device everywhere: its tokens and sessions answer 401 on every gateway from then on. */
export interface DeviceRetirement {
  retire(userId: string, deviceId: string): Promise<void>;
}

const signInFailed = () => new AppError('UNAUTHORIZED', 'invalid username or password');

/**
 * Sessions of the web app. Signing in checks the password exactly as POST /v1/auth/login does (one
 * Argon2 verification whatever the account, the same 401), and only then registers the browser as a
 * device of the user, so failed attempts leave nothing behind.
 */
export class SessionService {
  constructor(
    private readonly users: UserRepository,
    private readonly devices: DeviceRepository,
    private readonly registry: DevicesService,
    private readonly hasher: PasswordHasher,
    private readonly tokens: TokenService,
    private readonly retirement: DeviceRetirement,
  ) {}

  /**
   * `previousToken`: the session cookie the browser still holds, lapsed or not. When it was signed
   * for this user's device that is still active, that device is signed in again rather than a new
   * one registered, so one browser stays one device however often it signs in.
   */
  async signIn(username: string, password: string, device: { name: string; platform: string }, previousToken?: string): Promise<SignedIn> {
    const user = await this.users.findByUsername(username);
    const ok = await this.hasher.verify(user?.passwordHash, password);
    if (!ok || !user || user.deletedAt !== null) throw signInFailed();
    const deviceId = (await this.reusableDevice(user.id, previousToken)) ?? (await this.registry.register(device.name, device.platform)).id;
    const now = new Date();
    await this.devices.recordLogin(deviceId, user.id, now);
    return this.issue({ id: user.id, username: user.username, isAdmin: user.isAdmin }, deviceId, now);
  }

  private async reusableDevice(userId: string, previousToken: string | undefined): Promise<string | undefined> {
    const claims = previousToken === undefined ? undefined : this.tokens.signedClaims(previousToken);
    if (!claims || claims.userId !== userId) return undefined;
    const found = await this.devices.findActive(claims.deviceId);
    return found && found.userId === userId && found.kind === 'client' ? found.id : undefined;
  }

  /** The session again with a fresh token: a session in use never lapses, an idle one after 7 days. */
  async renew(userId: string, deviceId: string): Promise<SignedIn> {
    const user = await this.users.findActiveById(userId);
    if (!user) throw new AppError('UNAUTHORIZED', 'missing or invalid token');
    return this.issue({ id: user.id, username: user.username, isAdmin: user.isAdmin }, deviceId, new Date());
  }

  /** Signing out ends the browser's device, so its token is refused everywhere, not only forgotten here. */
  async signOut(userId: string, deviceId: string): Promise<void> {
    await this.retirement.retire(userId, deviceId);
  }

  private issue(user: SessionView['user'], deviceId: string, now: Date): SignedIn {
    const { token, expiresAt } = this.tokens.issue({ userId: user.id, deviceId }, now);
    return { token, user, deviceId, expiresAt: expiresAt.toISOString() };
  }
}
