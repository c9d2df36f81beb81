import { jsonTooDeep, readInt64, parseLossless } from '../../shared/json';
import { extensionOf, normalizeName } from '../../shared/names';
import { likeContains } from '../../shared/db/repositories/listing.repository';
import { parseOp } from '../../shared/sync/ops';
import { loadConfig } from '../../shared/config';

describe('names', () => {
  test('are stored in NFC', () => {
    expect(normalizeName('cafe\u0301')).toBe('caf\u00e9');
  });

  test.each([[''], ['a/b'], ['.'], ['..'], ['tab\there'], ['nul\u0000'], ['x'.repeat(256)], [42]])('%j is refused', (name) => {
    expect(() => normalizeName(name)).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST' }));
  });

  test('255 characters outside the BMP are accepted', () => {
    expect(normalizeName('😀'.repeat(255))).toHaveLength(510);
  });

  test.each([
    ['Report.PDF', 'pdf'],
    ['archive.tar.gz', 'gz'],
    ['noext', null],
    ['.hidden', null],
    ['trailing.', null],
    ['weird.p-d', null],
    ['long.abcdefghijklmnopq', null],
  ])('the stored extension of %s is %s', (name, ext) => {
    expect(extensionOf(name)).toBe(ext);
  });
});

describe('64-bit integers', () => {
  test('keep every digit through parsing', () => {
    const parsed = parseLossless('{"a":9007199254740993}') as { a: unknown };
    expect(readInt64(parsed.a)).toBe('9007199254740993');
  });

  test.each([['9223372036854775807'], ['-9223372036854775808'], ['0']])('%s is in range', (v) => {
    expect(readInt64(v)).toBe(v);
  });

  test.each([['9223372036854775808'], ['1.5'], ['1e3'], [''], ['0x10'], [12]])('%j is not a 64-bit integer', (v) => {
    expect(readInt64(v)).toBeUndefined();
  });
});

describe('search patterns', () => {
  test('make LIKE wildcards and the escape character literal', () => {
    expect(likeContains('50%_off!\\')).toBe('%50!%!_off!!\\%');
  });
});

describe('sync op parsing', () => {
  const op = (json: string) => parseOp((parseLossless(`{"ops":[${json}]}`) as { ops: unknown[] }).ops[0]);

  test('a create keeps its opId as sent and its payload for the trace', () => {
    const result = op('{"opId":"0012","type":"create","resourceId":"0123456789abcdef0123456789abcdef","payload":{"resourceType":"file","name":"a.txt","size":3}}');
    expect(result).toMatchObject({ ok: true, op: { opId: '12', echo: { opId: { raw: '0012', kind: 'string' } }, create: { size: 3, name: 'a.txt' } } });
  });

  test('a payload that is not an object is traced as {}', () => {
    expect(op('{"opId":1,"type":"share","payload":[1,2]}')).toMatchObject({ ok: true, op: { tracePayload: '{}' } });
  });

  test('a folder ignores file-only fields', () => {
    expect(op('{"opId":1,"type":"create","resourceId":"0123456789abcdef0123456789abcdef","payload":{"resourceType":"folder","name":"d","size":5}}')).toMatchObject({
      ok: true,
      op: { create: { size: 0, mimeType: null } },
    });
  });

  test.each([
    ['{"opId":1,"type":"create","resourceId":"0123456789abcdef0123456789abcdef","payload":{"resourceType":"file","name":"a","size":-1}}'],
    ['{"opId":1,"type":"create","resourceId":"0123456789abcdef0123456789abcdef","payload":{"resourceType":"link","name":"a"}}'],
    ['{"opId":1,"type":"move","resourceId":"0123456789abcdef0123456789abcdef","payload":{"parentId":"nope"}}'],
    ['{"opId":1,"type":"share","refId":"x"}'],
    ['{"type":"share"}'],
  ])('%s is malformed', (json) => {
    expect(op(json)).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
  });
});

describe('configuration', () => {
  test('uses the contract defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 8080, maxUploadBytes: 104857600, loginRateLimit: 20, syncTimeoutMs: 30000, redisUrl: 'redis://127.0.0.1:6379' });
    expect(config.databaseUrl).toBe('mysql://root@127.0.0.1:3306/filesync');
    expect(Object.isFrozen(config)).toBe(true);
  });

  test('names the variable that is wrong', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ JWT_SECRET: 'short' })).toThrow(/JWT_SECRET/);
    expect(() => loadConfig({ ADMIN_USERNAME: 'root' })).toThrow(/ADMIN_PASSWORD/);
  });
});
describe('TRUST_PROXY', () => {
  const trust = (value: string) => loadConfig({ TRUST_PROXY: value }).trustProxy;

  test('defaults to false: the client address is the socket’s', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(trust('false')).toBe(false);
    expect(trust('0')).toBe(false);
  });

  test('takes a hop count, or addresses, subnets and the proxy-addr names', () => {
    expect(trust('1')).toBe(1);
    expect(trust('loopback, 10.0.0.0/8, fd00::/8, 192.0.2.7')).toEqual(['loopback', '10.0.0.0/8', 'fd00::/8', '192.0.2.7']);
  });

  test.each([['true'], ['everyone'], ['10.0.0.0/33'], ['10.0.0.1/8/8'], ['300.1.1.1']])('refuses %s, naming the variable', (value) => {
    expect(() => trust(value)).toThrow(/TRUST_PROXY/);
  });
});

describe('names: Unicode that cannot be stored or that disguises a name', () => {
  test.each([['a\uD800b'], ['\uDFFF'], ['x\uD83D']])('a lone surrogate (%#) is refused', (name) => {
    expect(() => normalizeName(name)).toThrow(/lone surrogate/);
  });

  test.each([['\u202A'], ['\u202B'], ['\u202C'], ['\u202D'], ['\u202E'], ['\u2066'], ['\u2067'], ['\u2068'], ['\u2069']])('bidi control %# is refused', (c) => {
    expect(() => normalizeName(`photo${c}gpj.exe`)).toThrow(/bidirectional/);
  });

  test('a surrogate pair and other right-to-left text are accepted', () => {
    expect(normalizeName('smile-\uD83D\uDE00')).toBe('smile-😀');
    expect(normalizeName('שלום.txt')).toBe('שלום.txt');
  });
});

describe('jsonTooDeep', () => {
  test('counts nesting outside strings only', () => {
    expect(jsonTooDeep('[[[]]]', 3)).toBe(false);
    expect(jsonTooDeep('[[[[]]]]', 3)).toBe(true);
    expect(jsonTooDeep('{"a":"[[[[[[[[\\"[[["}', 3)).toBe(false);
    expect(jsonTooDeep(`{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`)).toBe(true);
  });
});
