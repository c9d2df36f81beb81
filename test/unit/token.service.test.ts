import { TOKEN_TTL_SECONDS, TokenService } from '../../services/gateway/auth/token.service';
import { newId } from '../../shared/ids';

/** Verification is remembered per token: what it remembers must never let a token in that verify would refuse. */
const claims = { userId: newId(), deviceId: newId() };

afterEach(() => jest.useRealTimers());

test('a verified token is accepted again with the same claims, and a token altered by one character is refused', () => {
  const tokens = new TokenService('s'.repeat(32));
  const { token } = tokens.issue(claims);
  expect(tokens.verify(token)).toEqual(claims);
  expect(tokens.verify(token)).toEqual(claims);

  const last = token.at(-2) === 'A' ? 'B' : 'A';
  const altered = `${token.slice(0, -2)}${last}${token.at(-1)}`;
  expect(() => tokens.verify(altered)).toThrow(expect.objectContaining({ code: 'UNAUTHORIZED' }));
});

test('a remembered token is refused once it expires', () => {
  jest.useFakeTimers({ now: new Date('2026-01-10T00:00:00Z') });
  const tokens = new TokenService('s'.repeat(32));
  const { token } = tokens.issue(claims, new Date(Date.now() - TOKEN_TTL_SECONDS * 1000 + 2000));
  expect(tokens.verify(token)).toEqual(claims);

  jest.setSystemTime(Date.now() + 3000);

  expect(() => tokens.verify(token)).toThrow(expect.objectContaining({ code: 'UNAUTHORIZED' }));
});

test("a token signed with another service's secret is refused, whatever this one remembers", () => {
  const ours = new TokenService('s'.repeat(32));
  const theirs = new TokenService('t'.repeat(32));
  ours.verify(ours.issue(claims).token);
  expect(() => ours.verify(theirs.issue(claims).token)).toThrow(expect.objectContaining({ code: 'UNAUTHORIZED' }));
});
