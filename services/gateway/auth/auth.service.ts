import { AppError, invalid } from '../../../shared/errors';
import type { DeviceRepository } from '../../../shared/db/repositories/device.repository';
import type { UserRepository } from '../../../shared/db/repositories/user.repository';
import type { PasswordHasher } from './password.hasher';
import type { TokenService } from './token.service';

export interface LoginResult {
  token: string;
  tokenType: 'Bearer';
  expiresAt: string;
  user: { id: string; username: string };
  deviceId: string;
}

const loginFailed = () => new AppError('UNAUTHORIZED', 'invalid username or password');

export class AuthService {
  constructor(
    private readonly users: UserRepository,
    private readonly devices: DeviceRepository,
    private readonly hasher: PasswordHasher,
    private readonly tokens: TokenService,
  ) {}

  /**
   * Unknown user, deleted user and wrong password all run one Argon2 verification and end in the
   * same 401, so neither the body nor the timing tells them apart.
   */
  async login(username: string, password: string, deviceId: string): Promise<LoginResult> {
    const device = await this.devices.findActive(deviceId);
    if (!device) throw invalid('deviceId is not a registered device', { field: 'deviceId' });
    const user = await this.users.findByUsername(username);
    const ok = await this.hasher.verify(user?.passwordHash, password);
    if (!ok || !user || user.deletedAt !== null) throw loginFailed();
    const now = new Date();
    await this.devices.recordLogin(device.id, user.id, now);
    const { token, expiresAt } = this.tokens.issue({ userId: user.id, deviceId: device.id }, now);
    return {
      token,
      tokenType: 'Bearer',
      expiresAt: expiresAt.toISOString(),
      user: { id: user.id, username: user.username },
      deviceId: device.id,
    };
  }

  /** Verifies the current password, then stores a new hash. Existing tokens stay valid. */
  async changePassword(userId: string, currentPassword: string, newPassword: string): Promise<void> {
    const user = await this.users.findActiveById(userId);
    if (!user) throw new AppError('UNAUTHORIZED', 'missing or invalid token');
    if (!(await this.hasher.verify(user.passwordHash, currentPassword))) {
      throw new AppError('FORBIDDEN', 'current_password is wrong');
    }
    const hash = await this.hasher.hash(newPassword);
    if (!(await this.users.updatePasswordHash(userId, hash, new Date()))) {
      throw new AppError('UNAUTHORIZED', 'missing or invalid token');
    }
  }
}
