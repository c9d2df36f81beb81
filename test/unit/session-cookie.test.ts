import type { Request } from 'express';
import { isSameOrigin, sessionCookie, sessionCookieOptions, sessionToken } from '../../services/gateway/auth/session.cookie';

/** The session cookie's attributes and the same-origin rule for requests that change state. */
function request(headers: Record<string, string>, extra: Partial<{ method: string; secure: boolean; protocol: string }> = {}): Request {
  return {
    headers,
    method: extra.method ?? 'POST',
    secure: extra.secure ?? false,
    protocol: extra.protocol ?? 'http',
    get: (name: string) => headers[name.toLowerCase()],
  } as unknown as Request;
}

test('the cookie is HttpOnly, SameSite=Lax, for the whole site, 7 days, and Secure exactly when the request came over https', () => {
  expect(sessionCookieOptions(request({}))).toEqual({ httpOnly: true, sameSite: 'lax', secure: false, path: '/', maxAge: 7 * 24 * 3600 * 1000 });
  expect(sessionCookieOptions(request({}, { secure: true })).secure).toBe(true);
});

test('Sec-Fetch-Site decides when present: only same-origin passes, same-site (another port) does not', () => {
  expect(isSameOrigin(request({ 'sec-fetch-site': 'same-origin' }), undefined)).toBe(true);
  for (const site of ['same-site', 'cross-site', 'none']) expect(isSameOrigin(request({ 'sec-fetch-site': site, host: 'a:1', origin: 'http://a:1' }), undefined)).toBe(false);
});

test('without Sec-Fetch-Site, Origin must be the request\'s own origin or PUBLIC_URL; no Origin at all is refused', () => {
  expect(isSameOrigin(request({ host: 'files.example:8080', origin: 'http://files.example:8080' }), undefined)).toBe(true);
  expect(isSameOrigin(request({ host: 'files.example:8080', origin: 'http://files.example:8081' }), undefined)).toBe(false);
  expect(isSameOrigin(request({ host: 'files.example:8080', origin: 'https://files.example:8080' }), undefined)).toBe(false);
  expect(isSameOrigin(request({ host: 'internal:8080', origin: 'https://files.example' }, { protocol: 'http' }), 'https://files.example')).toBe(true);
  expect(isSameOrigin(request({ host: 'files.example:8080' }), undefined)).toBe(false);
});

test('the token is read from the cookie; a write from another origin is refused, a read is not', () => {
  const cookie = 'other=1; filesync_session=aaa.bbb.ccc; theme=dark';
  expect(sessionCookie(request({ cookie }))).toBe('aaa.bbb.ccc');
  expect(sessionCookie(request({ cookie: 'filesync_session=bad value' }))).toBeUndefined();
  expect(sessionToken(request({ cookie, 'sec-fetch-site': 'cross-site' }, { method: 'GET' }), undefined)).toBe('aaa.bbb.ccc');
  expect(() => sessionToken(request({ cookie, 'sec-fetch-site': 'cross-site' }, { method: 'DELETE' }), undefined)).toThrow(/another origin/);
  expect(sessionToken(request({ 'sec-fetch-site': 'cross-site' }), undefined)).toBeUndefined();
});
