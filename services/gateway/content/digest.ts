import { invalid } from '../../../shared/errors';

/**
 * RFC 9530 digests. `Repr-Digest` and `Content-Digest` are structured-field dictionaries (RFC 8941):
 * `sha-256=:<base64>:, sha-512=:<base64>:`. Only sha-256 is ours; other algorithms are ignored as the
 * RFC asks. With no content coding, the representation and the content are the same bytes here, so
 * both headers say the same thing.
 */

const KEY = /^[a-z*][a-z0-9_\-.*]*$/;
const TOKEN_OR_NUMBER = /^[A-Za-z*0-9!#$%&'+\-.^_`|~:/]*$/;

interface Member {
  key: string;
  value: string;
}

/** Splits a dictionary on top-level commas, keeping byte sequences and quoted strings whole. */
function members(header: string): Member[] {
  const out: Member[] = [];
  let i = 0;
  const n = header.length;
  const skipSpaces = () => {
    while (i < n && (header[i] === ' ' || header[i] === '\t')) i++;
  };
  skipSpaces();
  while (i < n) {
    const keyStart = i;
    while (i < n && header[i] !== '=' && header[i] !== ',' && header[i] !== ';') i++;
    const key = header.slice(keyStart, i).trim();
    if (!KEY.test(key)) throw invalid('the digest header is not a structured-field dictionary');
    let value = '?1';
    if (header[i] === '=') {
      i++;
      const valueStart = i;
      if (header[i] === ':') {
        const end = header.indexOf(':', i + 1);
        if (end < 0) throw invalid('the digest header has an unterminated byte sequence');
        i = end + 1;
      } else if (header[i] === '"') {
        i++;
        while (i < n && header[i] !== '"') i += header[i] === '\\' ? 2 : 1;
        if (i >= n) throw invalid('the digest header has an unterminated string');
        i++;
      } else {
        while (i < n && header[i] !== ',' && header[i] !== ';' && header[i] !== ' ' && header[i] !== '\t') i++;
        if (!TOKEN_OR_NUMBER.test(header.slice(valueStart, i))) throw invalid('the digest header is not a structured-field dictionary');
      }
      value = header.slice(valueStart, i);
    }
    // Parameters (`;a=b`) are allowed on members and mean nothing for digests.
    while (header[i] === ';') {
      i++;
      while (i < n && header[i] !== ';' && header[i] !== ',') {
        if (header[i] === '"') {
          i++;
          while (i < n && header[i] !== '"') i += header[i] === '\\' ? 2 : 1;
        }
        i++;
      }
    }
    out.push({ key, value });
    skipSpaces();
    if (i < n) {
      if (header[i] !== ',') throw invalid('the digest header is not a structured-field dictionary');
      i++;
      skipSpaces();
      if (i >= n) throw invalid('the digest header ends with a comma');
    }
  }
  return out;
}

/**
 * The sha-256 named by a digest header, as 64 lowercase hex characters; undefined when the header is
 * absent or names only other algorithms. A malformed sha-256 value is a 400.
 */
export function sha256FromDigestHeader(header: string | undefined, name: string): string | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  let found: string | undefined;
  for (const { key, value } of members(header)) {
    if (key !== 'sha-256') continue;
    const match = /^:([A-Za-z0-9+/]*={0,2}):$/.exec(value);
    const bytes = match ? Buffer.from(match[1]!, 'base64') : undefined;
    if (!bytes || bytes.length !== 32 || bytes.toString('base64') !== match![1]) {
      throw invalid(`${name}: sha-256 must be a byte sequence of 32 bytes in base64 (sha-256=:<base64>:)`);
    }
    // RFC 8941: the last duplicate key wins.
    found = bytes.toString('hex');
  }
  return found;
}

/** The digest the client declared for a raw body: Repr-Digest or Content-Digest, which must agree. */
export function declaredBodyDigest(headers: Record<string, string | string[] | undefined>): string | undefined {
  const joined = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : v);
  const repr = sha256FromDigestHeader(joined(headers['repr-digest']), 'Repr-Digest');
  const content = sha256FromDigestHeader(joined(headers['content-digest']), 'Content-Digest');
  if (repr && content && repr !== content) throw invalid('Repr-Digest and Content-Digest disagree');
  return repr ?? content;
}

/** A `sha256` form field: 64 hex characters, either case. */
export function sha256FromHexField(value: string | undefined, field = 'sha256'): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^[0-9a-fA-F]{64}$/.test(value)) throw invalid(`${field} must be 64 hexadecimal characters`, { field });
  return value.toLowerCase();
}

/** The `Repr-Digest` value of content whose SHA-256 is `hex`. */
export function reprDigest(hex: string): string {
  return `sha-256=:${Buffer.from(hex, 'hex').toString('base64')}:`;
}
