import { createHash } from 'node:crypto';
import { declaredBodyDigest, reprDigest, sha256FromDigestHeader, sha256FromHexField } from '../../services/gateway/content/digest';
import { checkContentConditions } from '../../services/gateway/content/preconditions';
import { AppError } from '../../shared/errors';

const hex = createHash('sha256').update('hello').digest('hex');
const b64 = Buffer.from(hex, 'hex').toString('base64');
const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as AppError).code;
  }
  return 'none';
};

describe('RFC 9530 digest headers', () => {
  test.each([
    [`sha-256=:${b64}:`],
    [`  sha-256=:${b64}:  `],
    [`sha-512=:${Buffer.alloc(64).toString('base64')}:, sha-256=:${b64}:`],
    [`sha-256=:${b64}:;note="a, b", unixsum=30637`],
    [`sha-256=:${Buffer.alloc(32).toString('base64')}:, sha-256=:${b64}:`],
  ])('%s names the sha-256 of "hello"', (header) => {
    expect(sha256FromDigestHeader(header, 'Repr-Digest')).toBe(hex);
  });

  test.each([[undefined], [''], ['sha-512=:AAAA:'], ['md5=:AAAA:, id-sha-256=:AAAA:']])('%j names no sha-256', (header) => {
    expect(sha256FromDigestHeader(header, 'Repr-Digest')).toBeUndefined();
  });

  test.each([
    ['sha-256=abc'],
    ['sha-256=:AAAA:'],
    [`sha-256=:${b64.slice(0, -1)}:`],
    [`sha-256=:${b64}`],
    [`sha-256=:${b64}: junk`],
    [`sha-256=:${b64}:,`],
    ['SHA-256=:AAAA:'],
  ])('%j is a 400', (header) => {
    expect(code(() => sha256FromDigestHeader(header, 'Repr-Digest'))).toBe('INVALID_REQUEST');
  });

  test('Repr-Digest and Content-Digest must agree when both are sent', () => {
    expect(declaredBodyDigest({ 'content-digest': `sha-256=:${b64}:` })).toBe(hex);
    expect(code(() => declaredBodyDigest({ 'repr-digest': `sha-256=:${b64}:`, 'content-digest': `sha-256=:${Buffer.alloc(32).toString('base64')}:` }))).toBe(
      'INVALID_REQUEST',
    );
  });

  test('the sha256 form field is 64 hex characters, either case, and comes back lowercase', () => {
    expect(sha256FromHexField(hex.toUpperCase())).toBe(hex);
    expect(sha256FromHexField(undefined)).toBeUndefined();
    expect(code(() => sha256FromHexField(hex.slice(1)))).toBe('INVALID_REQUEST');
  });

  test('the Repr-Digest of content is its sha-256 in base64', () => {
    expect(reprDigest(hex)).toBe(`sha-256=:${b64}:`);
  });
});

describe('If-Match / If-None-Match on content', () => {
  test.each([
    [hex, { ifMatch: `"${hex}"` }, 'none'],
    [hex, { ifMatch: `"other", "${hex}"` }, 'none'],
    [hex, { ifMatch: hex }, 'none'],
    [hex, { ifMatch: '*' }, 'none'],
    [hex, { ifMatch: `W/"${hex}"` }, 'PRECONDITION_FAILED'],
    [hex, { ifMatch: '"other"' }, 'PRECONDITION_FAILED'],
    [null, { ifMatch: '*' }, 'PRECONDITION_FAILED'],
    [null, { ifNoneMatch: '*' }, 'none'],
    [hex, { ifNoneMatch: '*' }, 'PRECONDITION_FAILED'],
    [hex, { ifNoneMatch: `W/"${hex}"` }, 'PRECONDITION_FAILED'],
    [hex, { ifNoneMatch: '"other"' }, 'none'],
    [hex, {}, 'none'],
  ])('content %s with %j: %s', (current, conditions, expected) => {
    expect(code(() => checkContentConditions({ rev: 3, contentSha256: current }, conditions))).toBe(expected);
  });
});
