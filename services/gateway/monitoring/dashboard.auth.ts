import { createHmac, randomBytes } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { AppError, isAppError } from '../../../shared/errors';
import { bearerToken } from '../auth/auth.middleware';
import type { PasswordHasher } from '../auth/password.hasher';
import type { PrincipalService } from '../auth/principal.service';
import type { AttemptLimit } from '../auth/attempt.limit';
import { clientAddress } from '../auth/rate.limits';
import type { TokenService } from '../auth/token.service';
import { basicCredentials } from '../auth/basic.credentials';

export const DASHBOARD_REALM = 'filesync';

export interface AdminGateOptions {
  /** How long a verified Basic credential is trusted without another Argon2 run. */
  cacheTtlMs: number;
  /** Basic attempts per client address that reach Argon2, counted before it runs (kept in Redis, so shared by every gateway); none when absent. */
  attempts?: AttemptLimit;
  now?: () => number;
}

interface Verified {
  /** The stored hash the password matched: a password change elsewhere invalidates the entry at once. */
  passwordHash: string;
  expiresAt: number;
}

const MAX_CACHED = 1000;

const unauthorized = () => new AppError('UNAUTHORIZED', 'administrator credentials required: a Bearer token or HTTP Basic');
const forbidden = () => new AppError('FORBIDDEN', 'administrators only');

/**
 * Lets administrators, and only them, into the operator pages: by Bearer token like the API, or by
 * HTTP Basic so that a browser can open the dashboard.
 *
 * A browser sends Basic credentials with every asset and every poll of the dashboard, and each
 * Argon2 run costs 64 MiB, so a successful check is remembered for `cacheTtlMs`. The cache key is an
 * HMAC of "username:password" under a key that lives only in this process, so the map never holds
 * anything a leaked heap could turn back into a password quickly. Misses go through the shared
 * PasswordHasher, so Basic checks queue behind the same Argon2 limiter as sign-ins; each miss is
 * counted against its address before Argon2 runs (and given back when right), so a burst of parallel
 * guesses runs at most the limit's worth of Argon2 checks and the rest are turned away.
 */
export class AdminGate {
  private readonly cacheKey = randomBytes(32);
  private readonly verified = new Map<string, Verified>();
  private readonly now: () => number;

  constructor(
    private readonly principals: Pick<PrincipalService, 'lookup' | 'account'>,
    private readonly tokens: TokenService,
    private readonly hasher: PasswordHasher,
    private readonly options: AdminGateOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  middleware(): RequestHandler {
    return async (req, res, next) => {
      try {
        await this.admit(req);
      } catch (err) {
        if (isAppError(err) && err.code === 'UNAUTHORIZED') res.setHeader('WWW-Authenticate', `Basic realm="${DASHBOARD_REALM}", charset="UTF-8"`);
        throw err;
      }
      next();
    };
  }

  /** Resolves for an administrator; throws 401, 403, 429 (too many failures) or 503 (Argon2 busy). */
  async admit(req: Request): Promise<void> {
    const header = req.headers.authorization ?? '';
    if (/^Bearer /i.test(header)) return this.admitBearer(req);
    const credentials = basicCredentials(header);
    if (!credentials) throw unauthorized();
    return this.admitBasic(credentials.username, credentials.password, clientAddress(req));
  }

  private async admitBearer(req: Request): Promise<void> {
    const token = bearerToken(req);
    if (!token) throw unauthorized();
    const claims = this.tokens.verify(token);
    const principal = await this.principals.lookup(claims.userId, claims.deviceId);
    if (!principal) throw unauthorized();
    if (!principal.isAdmin) throw forbidden();
  }

  private async admitBasic(username: string, password: string, client: string): Promise<void> {
    const user = await this.principals.account(username);
    const key = createHmac('sha256', this.cacheKey).update(`${username}:${password}`).digest('base64url');
    const cached = this.verified.get(key);
    const active = user && user.deletedAt === null ? user : undefined;
    const hit = cached !== undefined && cached.expiresAt > this.now() && active !== undefined && active.passwordHash === cached.passwordHash;
    if (!hit) {
      if (cached) this.verified.delete(key);
      const attempt = await this.options.attempts?.take(client, 'too many failed sign-ins, retry later');
      // Runs even for an unknown user (against the dummy hash), like login, so timing tells nothing.
      const ok = await this.hasher.verify(user?.passwordHash, password).catch(async (err: unknown) => {
        await attempt?.succeeded(); // Argon2 never ran (busy limiter): nothing was guessed
        throw err;
      });
      if (!ok || !active) throw unauthorized();
      await attempt?.succeeded();
      this.remember(key, active.passwordHash);
    }
    if (!active?.isAdmin) throw forbidden();
  }

  private remember(key: string, passwordHash: string): void {
    if (this.verified.size >= MAX_CACHED) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(key, { passwordHash, expiresAt: this.now() + this.options.cacheTtlMs });
  }
}
