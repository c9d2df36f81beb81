import { createSecretKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { AppError } from '../../../shared/errors';
import { isId } from '../../../shared/ids';

export const TOKEN_TTL_SECONDS = 7 * 24 * 3600;
/** Tokens whose verification is remembered; a client sends the same one with every request. */
const VERIFIED_KEPT = 10_000;

export interface TokenClaims {
  userId: string;
  deviceId: string;
}

const unauthorized = (message = 'missing or invalid token') => new AppError('UNAUTHORIZED', message);

/** HS256 tokens binding a user (`sub`) and a device (`device_id`), valid 7 days. */
export class TokenService {
  /**
   * Built once: given a string, jsonwebtoken first tries to read it as a PEM key on every call,
   * which cost more than the HMAC itself.
   */
  private readonly key: KeyObject;
  /**
   * Tokens that passed verify, by their exact text, with their expiry (epoch seconds): only the
   * token that was verified matches, and it is refused again once it expires. Oldest first.
   */
  private readonly verified = new Map<string, { claims: TokenClaims; exp: number }>();

  constructor(secret: string) {
    this.key = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  issue(claims: TokenClaims, now = new Date()): { token: string; expiresAt: Date } {
    const iat = Math.floor(now.getTime() / 1000);
    const exp = iat + TOKEN_TTL_SECONDS;
    // No `noTimestamp`: jsonwebtoken would then strip the `iat` claim every token must carry (one without it is refused).
    const token = jwt.sign({ sub: claims.userId, device_id: claims.deviceId, iat, exp }, this.key, { algorithm: 'HS256' });
    return { token, expiresAt: new Date(exp * 1000) };
  }

  /**
   * Verifies strictly: HS256 only, signature, `iat` and `exp` present and `exp` in the future, a
   * lifetime of at most 7 days (a token signed with the secret for years is refused all the same),
   * well-formed ids.
   */
  verify(token: string): TokenClaims {
    const kept = this.verified.get(token);
    if (kept && kept.exp > Date.now() / 1000) return kept.claims;
    if (kept) this.verified.delete(token);
    const { claims, exp } = this.check(token);
    this.verified.set(token, { claims, exp });
    if (this.verified.size > VERIFIED_KEPT) this.verified.delete(this.verified.keys().next().value!);
    return claims;
  }

  /**
   * The claims of a token this service signed, lapsed or not (undefined otherwise): who a browser's
   * old session cookie was for, so signing in again keeps the browser's device. Grants nothing.
   */
  signedClaims(token: string): TokenClaims | undefined {
    try {
      return this.check(token, true).claims;
    } catch {
      return undefined;
    }
  }

  private check(token: string, lapsedToo = false): { claims: TokenClaims; exp: number } {
    let payload: string | jwt.JwtPayload;
    try {
      payload = jwt.verify(token, this.key, { algorithms: ['HS256'], ignoreExpiration: lapsedToo });
    } catch {
      throw unauthorized();
    }
    if (typeof payload !== 'object' || typeof payload.exp !== 'number' || typeof payload.iat !== 'number') throw unauthorized();
    // An `iat` in the future would stretch the lifetime just the same; a minute covers clock skew.
    if (payload.exp - payload.iat > TOKEN_TTL_SECONDS || payload.iat > Date.now() / 1000 + 60) throw unauthorized();
    const deviceId = (payload as { device_id?: unknown }).device_id;
    if (!isId(payload.sub) || !isId(deviceId)) throw unauthorized();
    return { claims: { userId: payload.sub, deviceId }, exp: payload.exp };
  }
}
