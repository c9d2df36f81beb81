import type { Request } from 'express';
import { isAppError } from '../../../shared/errors';
import type { AppPasswordsService } from '../app-passwords/app-passwords.service';
import { bearerToken } from '../auth/auth.middleware';
import type { Principal, PrincipalService } from '../auth/principal.service';
import { clientAddress, type FailureLimit } from '../auth/rate.limits';
import type { TokenService } from '../auth/token.service';
import { DavError } from './dav.errors';
import { basicCredentials } from '../auth/basic.credentials';

export const DAV_REALM = 'filesync';

export interface DavAuthOptions {
  tokens: TokenService;
  principals: PrincipalService;
  appPasswords: AppPasswordsService;
  /** The login limits, counted in the same Redis keys as `POST /auth/login`: per address, per address and username. */
  addressFailures: FailureLimit;
  accountFailures: FailureLimit;
}

const unauthorized = (message: string) => new DavError(401, message);

/**
 * Who a WebDAV request is: a Bearer token exactly as on `/v1`, or HTTP Basic with the username and
 * an app password (never the account password, which is not even looked at). A failed Basic attempt
 * counts against the login rate limits, and over them the answer is 429 before any lookup.
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
    const { addressFailures, accountFailures, appPasswords } = this.options;
    try {
      await addressFailures.check(address, 'too many sign-in attempts from this address, retry later');
      await accountFailures.check(account, 'too many sign-in attempts, retry later');
    } catch (err) {
      if (isAppError(err)) throw new DavError(429, err.message, undefined, [], err.retryAfter ?? 60);
      throw err;
    }
    const principal = await appPasswords.authenticate(credentials.username, credentials.password);
    if (!principal) {
      await Promise.all([addressFailures.record(address), accountFailures.record(account)]);
      throw unauthorized('the username and app password do not match');
    }
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
