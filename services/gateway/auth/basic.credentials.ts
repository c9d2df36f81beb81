/**
 * The username and password of an HTTP Basic `Authorization` header, or undefined when it is not
 * one. Bounded like the login route's body, so nobody can feed a password hash a megabyte.
 */
export function basicCredentials(header: string): { username: string; password: string } | undefined {
  const match = /^Basic +([A-Za-z0-9+/=]{1,2000})$/i.exec(header);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  const username = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  if (username.length > 255 || password.length === 0 || password.length > 1024) return undefined;
  return { username, password };
}
