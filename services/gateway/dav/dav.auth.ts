import type { Request } from 'express';
import { isAppError } from '../../../shared/errors';
import type { AppPasswordsService } from '../app-passwords/app-passwords.service';
import { bearerToken } from '../auth/auth.middleware';
import type { Principal, PrincipalService } from '../auth/principal.service';
import { takeAttempts, type AttemptLimit } from '../auth/attempt.limit';
import { clientAddress } from '../auth/rate.limits';
import type { TokenService } from '../auth/token.service';
import { DavError } from './dav.errors';
import { basicCredentials } from '../auth/basic.credentials';

export const DAV_REALM = 'filesync';

export interface DavAuthOptions {
  tokens: TokenService;
  principals: PrincipalService;
  appPasswords: AppPasswordsService;
  /** The login limits, counted in the same Redis keys as `POST /auth/login`: per address, per address and username. */
  addressAttempts: AttemptLimit;
  accountAttempts: AttemptLimit;
}

const unauthorized = (message: string) => new DavError(401, message);

/**
 * Who a WebDAV request is: a Bearer token exactly as on `/v1`, or HTTP Basic with the username and
 * an app password (never the account password, which is not even looked at). A Basic credential this
 * gateway has not just seen verified counts as a sign-in attempt against the login rate limits before
 * it is looked up (given back when right): over them the answer is 429 before any lookup, and a burst
 * of parallel guesses looks up no more than the limits allow.
 */
export class DavAuthenticator {
  constructor(private readonly options: DavAuthOptions) {}

  async authenticate(req: Request): Promise<Principal> {
    const header = req.headers.authorization ?? '';
    if (/^Bearer /i.test(header)) return this.bearer(req);
    const credentials = basicCredentials(header);
    if (!credentials) throw unauthorized('HTTP Basic with an app password, or a Bearer token, is required');
    const address = clientAddress(req);
    const account = `${address}|${credentials.username.slice(0, 256).toLowerCase()}`;
    const { addressAttempts, accountAttempts, appPasswords } = this.options;
    const limits = [
      [addressAttempts, address, 'too many sign-in attempts from this address, retry later'],
      [accountAttempts, account, 'too many sign-in attempts, retry later'],
    ] as const;
    let attempt;
    try {
      // A credential verified within AUTH_CACHE_MS is not checked again, so it is not an attempt; it
      // is still refused while its address or account is locked out.
      const known = appPasswords.remembered(credentials.username, credentials.password);
      if (known) {
        for (const [limit, key, message] of limits) await limit.check(key, message);
        return known;
      }
      attempt = await takeAttempts(limits);
    } catch (err) {
      if (isAppError(err)) throw new DavError(429, err.message, undefined, [], err.retryAfter ?? 60);
      throw err;
    }
    const principal = await appPasswords.authenticate(credentials.username, credentials.password).catch(async (err: unknown) => {
      await attempt.succeeded(); // the lookup never answered: nothing was checked
      throw err;
    });
    if (!principal) throw unauthorized('the username and app password do not match');
    await attempt.succeeded();
    return principal;
  }

  private async bearer(req: Request): Promise<Principal> {
    const token = bearerToken(req);
    if (!token) throw unauthorized('missing or invalid token');
    let claims;
    try {
      claims = this.options.tokens.verify(token);
    } catch {
      throw unauthorized('missing or invalid token');
    }
    const principal = await this.options.principals.current(claims.userId, claims.deviceId);
    if (!principal) throw unauthorized('missing or invalid token');
    return principal;
  }
}
